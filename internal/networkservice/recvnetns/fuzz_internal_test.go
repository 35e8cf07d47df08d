package recvnetns

import (
	"fmt"
	"testing"
)

// FuzzNamespaceURLs feeds any string to the two URL parsers. Each accepts exactly one spelling
// per value: the one grpcfd writes for a passed descriptor, and the one recvfd writes for a
// received one.
func FuzzNamespaceURLs(f *testing.F) {
	for _, seed := range []string{
		"inode://4/4026531840", "inode://4/04026531840", "inode://+4/1", "inode://4:1/2", "inode://4/1?x", "inode:///1",
		"inode://4/%31", "file:///proc/1/ns/net", ownDescriptorURLPrefix + "7", ownDescriptorURLPrefix + "07",
		ownDescriptorURLPrefix + "7?x", "file://host/proc/1/fd/7", "/proc/1/ns/net", "", "%zz",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if id, err := parseInodeURL(raw); err == nil {
			if canonical := fmt.Sprintf("inode://%d/%d", id.dev, id.ino); raw != canonical {
				t.Fatalf("accepted %q as %s", raw, canonical)
			}
		}
		if fd, err := parseOwnDescriptorURL(raw); err == nil {
			if canonical := fmt.Sprintf("%s%d", ownDescriptorURLPrefix, fd); raw != canonical || fd < 0 {
				t.Fatalf("accepted %q as descriptor %d", raw, fd)
			}
		}
	})
}
