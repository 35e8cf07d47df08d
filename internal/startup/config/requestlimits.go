package config

import (
	"reflect"
	"strconv"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/requestcheck"
)

// RequestLimits bound the repeated fields of every Request the forwarder accepts: each entry costs
// memory, and most cost kernel or VPP writes. Over a bound is InvalidArgument naming the field and
// the variable. The defaults are requestcheck.DefaultLimits.
type RequestLimits struct {
	MaxRequestMechanisms   int `default:"16" desc:"Most mechanism preferences in a Request" split_words:"true"`
	MaxRequestPathSegments int `default:"32" desc:"Most path segments in a Request" split_words:"true"`
	MaxRequestLabels       int `default:"64" desc:"Most entries in a Request's labels, and in each of its other string maps (mechanism parameters, extra context, path segment metrics)" split_words:"true"`
	MaxRequestLabelSize    int `default:"4096" desc:"Longest key or value, in bytes, of an entry in a Request's labels and other string maps" split_words:"true"`
	MaxRequestAddresses    int `default:"64" desc:"Most source, and most destination, IP addresses in a Request" split_words:"true"`
	MaxRequestRoutes       int `default:"1024" desc:"Most source, and most destination, routes in a Request" split_words:"true"`
	MaxRequestPolicies     int `default:"1024" desc:"Most policy routes in a Request" split_words:"true"`
	MaxRequestPolicyRoutes int `default:"64" desc:"Most routes in one policy route" split_words:"true"`
	MaxRequestPrefixes     int `default:"1024" desc:"Most excluded prefixes, extra prefixes and extra prefix requests (each) in a Request" split_words:"true"`
	MaxRequestNeighbors    int `default:"256" desc:"Most IP neighbours in a Request" split_words:"true"`
	MaxRequestDNSEntries   int `default:"32" desc:"Most DNS configs in a Request, and most server IPs and search domains in each" split_words:"true"`
}

// Limits are the bounds as the request check element takes them, each naming its variable.
func (l *RequestLimits) Limits() requestcheck.Limits {
	limit := func(max *int) requestcheck.Limit {
		return requestcheck.Limit{Max: *max, Setting: l.variableOf(max)}
	}
	return requestcheck.Limits{
		MechanismPreferences: limit(&l.MaxRequestMechanisms),
		PathSegments:         limit(&l.MaxRequestPathSegments),
		Labels:               limit(&l.MaxRequestLabels),
		LabelSize:            limit(&l.MaxRequestLabelSize),
		Addresses:            limit(&l.MaxRequestAddresses),
		Routes:               limit(&l.MaxRequestRoutes),
		Policies:             limit(&l.MaxRequestPolicies),
		PolicyRoutes:         limit(&l.MaxRequestPolicyRoutes),
		Prefixes:             limit(&l.MaxRequestPrefixes),
		Neighbors:            limit(&l.MaxRequestNeighbors),
		DNSEntries:           limit(&l.MaxRequestDNSEntries),
	}
}

// variableOf names the variable of the field max points into.
func (l *RequestLimits) variableOf(max *int) string {
	value := reflect.ValueOf(l).Elem()
	for i := range value.NumField() {
		if value.Field(i).Addr().Interface() == max {
			return variableName(value.Type().Field(i))
		}
	}
	panic("config: not a field of RequestLimits")
}

// checkRequestLimits refuses a bound below one: it would refuse every Request that has the field.
func (c *Config) checkRequestLimits() error {
	value := reflect.ValueOf(&c.RequestLimits).Elem()
	for i := range value.NumField() {
		if bound := value.Field(i).Int(); bound < 1 {
			variable := variableName(value.Type().Field(i))
			return &ValueError{Variable: variable, Value: rawValue(variable, strconv.FormatInt(bound, 10)), Reason: "must be a positive number"}
		}
	}
	return nil
}
