package kernelif

import "testing"

func TestParseAcceptsNamesCaseInsensitively(t *testing.T) {
	for input, want := range map[string]Kind{"auto": Auto, "TAP": Tap, " veth ": Veth} {
		got, err := Parse(input)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", input, got, err, want)
		}
	}
}

func TestParseRejectsUnknownNames(t *testing.T) {
	if _, err := Parse("memif"); err == nil {
		t.Fatal("Parse(memif) succeeded; want an error")
	}
}

func TestResolve(t *testing.T) {
	present := func() bool { return true }
	absent := func() bool { return false }
	cases := []struct {
		kind    Kind
		vhost   func() bool
		want    Kind
		comment string
	}{
		{Auto, present, Tap, "auto with vhost-net"},
		{Auto, absent, Veth, "auto without vhost-net"},
		{Tap, absent, Tap, "forced tap"},
		{Veth, present, Veth, "forced veth"},
	}
	for _, c := range cases {
		if got := c.kind.resolve(c.vhost); got != c.want {
			t.Errorf("%s: got %v, want %v", c.comment, got, c.want)
		}
	}
}
