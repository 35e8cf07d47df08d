package vppsim_test

import (
	"context"
	"testing"

	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/memclnt"
)

// BenchmarkControlPing measures one request/reply round trip through govpp and the
// simulator's socket server.
func BenchmarkControlPing(b *testing.B) {
	sim := startSimB(b)
	conn := connectB(b, sim)
	client := memclnt.NewServiceClient(conn)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := client.ControlPing(ctx, &memclnt.ControlPing{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSwInterfaceDump100 measures a multipart dump of 100 interfaces.
func BenchmarkSwInterfaceDump100(b *testing.B) {
	sim := startSimB(b)
	conn := connectB(b, sim)
	ctx := context.Background()
	ifc := interfaces.NewServiceClient(conn)
	for i := 0; i < 99; i++ {
		if _, err := ifc.CreateLoopback(ctx, &interfaces.CreateLoopback{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		stream, err := ifc.SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for ; ; n++ {
			if _, err := stream.Recv(); err != nil {
				break
			}
		}
		if n != 100 {
			b.Fatalf("dumped %d interfaces, want 100", n)
		}
	}
}
