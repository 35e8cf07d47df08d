package inspect

import (
	"fmt"
	"io"
	"strings"
)

// WriteText writes the report for people: one block per connection, then orphans and foreign state.
func WriteText(w io.Writer, r *Report) error {
	p := &printer{}
	running := "no: its connections are a previous run's, to be adopted or released by the next one"
	if r.Journal.ForwarderRunning {
		running = "yes"
	}
	p.line(0, "journal %s (forwarder running: %s)%s", r.Journal.Dir, running, errorSuffix(r.Journal.Error))
	if r.Journal.Unwritable != "" {
		p.line(1, "RESTART RECOVERY OFF: the directory takes no writes (%s); a running forwarder holds its connections in memory only", r.Journal.Unwritable)
	}
	p.line(0, "VPP %s: %d interfaces%s", r.VPP.Socket, r.VPP.Interfaces, errorSuffix(r.VPP.Error))
	for _, c := range r.Connections {
		p.connection(c)
	}
	p.findings("ORPHANS (carry this forwarder's mark, no connection accounts for them)", r.Orphans)
	p.findings("FOREIGN (in this forwarder's table range or tagged in VPP, not provably its own; never touched)", r.Foreign)
	_, err := io.WriteString(w, p.String())
	return err
}

type printer struct{ strings.Builder }

func (p *printer) line(indent int, format string, args ...any) {
	p.WriteString(strings.Repeat("  ", indent))
	fmt.Fprintf(p, format, args...)
	p.WriteString("\n")
}

func (p *printer) connection(c *Connection) {
	health := "healthy"
	if len(c.Problems) > 0 {
		health = fmt.Sprintf("%d problems", len(c.Problems))
	}
	p.line(0, "")
	p.line(0, "CONNECTION %s: %s", c.ID, health)
	for _, problem := range c.Problems {
		p.line(1, "! %s", problem)
	}
	for _, s := range c.Sides {
		p.line(1, "%s side, mechanism %s", s.Side, s.Mechanism)
		for _, i := range s.VPP {
			p.line(2, "vpp %s %s (sw_if_index %d) tag %s%s", i.Kind, i.Name, i.SwIfIndex, i.Tag, hostIf(i.HostIfName))
			for _, xc := range i.XConnects {
				p.line(3, "%s", xc)
			}
		}
		if s.ForwarderVeth != nil {
			p.line(2, "forwarder veth end %s (index %d, MAC %s)", s.ForwarderVeth.Name, s.ForwarderVeth.Index, s.ForwarderVeth.MAC)
		}
		if k := s.Kernel; k != nil {
			p.line(2, "kernel %s in %s (namespace %s) index %d MAC %s up %t", k.Interface, k.Netns, k.Namespace, k.Index, k.MAC, k.Up)
			p.list(3, "address", k.Addresses)
			p.list(3, "marked", k.Routes)
			for _, t := range k.Policies {
				p.line(3, "policy table %d", t.Table)
				p.list(4, "", t.Rules)
				p.list(4, "", t.Routes)
			}
		}
	}
	states := "committed"
	if c.Record.Committed == nil {
		states = "intent only"
	} else if c.Record.Intent != nil {
		states = "committed, with the intent of a Request in progress or failed"
	}
	p.line(1, "journal record: %s, connection IDs %s", states, strings.Join(c.Record.IDs(), " "))
}

func (p *printer) list(indent int, what string, items []string) {
	for _, item := range items {
		if what != "" {
			p.line(indent, "%s %s", what, item)
		} else {
			p.line(indent, "%s", item)
		}
	}
}

func (p *printer) findings(title string, findings []Finding) {
	p.line(0, "")
	p.line(0, "%s: %d", title, len(findings))
	for _, f := range findings {
		p.line(1, "%s: %s", f.Where, f.What)
	}
}

func hostIf(name string) string {
	if name == "" {
		return ""
	}
	return ", kernel side " + name
}

func errorSuffix(err string) string {
	if err == "" {
		return ""
	}
	return " (" + err + ")"
}
