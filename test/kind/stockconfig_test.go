package kind

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/config"
)

// Fields of the stock configuration that forwarder-vpp does not have (SR-IOV), and its own (besides
// the NSM_MAX_REQUEST_* bounds of config.RequestLimits).
var (
	stockOnlyFields = []string{
		"ResourcePollTimeout", "DevicePluginPath", "PodResourcesPath", "SRIOVConfigFile",
		"PCIDevicesPath", "PCIDriversPath", "CgroupPath", "VFIOPath",
	}
	ourOnlyFields = []string{"KernelInterfaceType", "StateDir", "MaxHeldDescriptorsPerPeer", "MaxHeldDescriptors"}
)

// TestConfigDefaultsAreStocks reads the stock cmd-forwarder-vpp's config struct and requires the
// same variables (field name and word splitting make the name) with the same defaults: an
// install that sets nothing gets what it got from the stock image (plain-HTTP Prometheus
// included).
func TestConfigDefaultsAreStocks(t *testing.T) {
	stock := stockConfigTags(t, filepath.Join(stockReferenceDir(t), "cmd-forwarder-vpp", "internal", "config", "config.go"))
	ours := reflect.TypeOf(config.Config{})
	for name, tag := range stock {
		field, ok := ours.FieldByName(name)
		if !ok {
			require.Contains(t, stockOnlyFields, name, "stock variable %s is missing", name)
			continue
		}
		require.Equal(t, tag.Get("split_words"), field.Tag.Get("split_words"), "%s: the variable's name", name)
		require.Equal(t, tag.Get("default"), field.Tag.Get("default"), "%s: the stock default", name)
	}
	requestLimits := reflect.TypeOf(config.RequestLimits{})
	for _, field := range reflect.VisibleFields(ours) {
		if field.Anonymous || field.Tag.Get("ignored") == "true" {
			continue
		}
		_, requestLimit := requestLimits.FieldByName(field.Name)
		if _, ok := stock[field.Name]; !ok && !requestLimit {
			require.True(t, slices.Contains(ourOnlyFields, field.Name), "%s is not a stock variable nor a documented addition", field.Name)
		}
	}
}

// stockConfigTags returns the struct tag of each field of the Config type in the Go file.
func stockConfigTags(t *testing.T, path string) map[string]reflect.StructTag {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	tags := map[string]reflect.StructTag{}
	ast.Inspect(file, func(node ast.Node) bool {
		spec, ok := node.(*ast.TypeSpec)
		if !ok || spec.Name.Name != "Config" {
			return true
		}
		for _, field := range spec.Type.(*ast.StructType).Fields.List {
			require.NotNil(t, field.Tag)
			tag, err := strconv.Unquote(field.Tag.Value)
			require.NoError(t, err)
			for _, name := range field.Names {
				tags[name.Name] = reflect.StructTag(tag)
			}
		}
		return false
	})
	require.NotEmpty(t, tags, "%s has no Config struct", path)
	return tags
}
