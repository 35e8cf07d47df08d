package fdtransport_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/transport/fdtransport"
)

// Arrivals, claims, sweeps and the close run on different goroutines, as gRPC's reader, the calls
// and the timer do; under -race this checks they share nothing unguarded, and that the close
// leaves nothing open whatever it interrupted.
func TestConcurrentArrivalsClaimsAndSweepsLeaveNothingOpen(t *testing.T) {
	const retention = 20 * time.Millisecond
	stock, ours := stockToOurs(t, fdtransport.WithRetention(retention))
	filenames := []string{newFile(t, "a"), newFile(t, "b"), newFile(t, "c")}
	baseline, _ := openDescriptors(t, filenames[0])
	var inodes [][2]uint64
	for _, filename := range filenames {
		dev, ino := inodeOf(t, filename)
		inodes = append(inodes, [2]uint64{dev, ino})
	}

	stop := make(chan struct{})
	var claimers sync.WaitGroup
	for i := range 4 {
		claimers.Add(1)
		go func() {
			defer claimers.Done()
			for n := i; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				// A claim ends with the file, or empty once it waited the retention or the
				// connection closed: it never needs abandoning.
				key := inodes[n%len(inodes)]
				if file := <-ours.RecvFile(key[0], key[1]); file != nil {
					_ = file.Close()
				}
			}
		}()
	}
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); {
		for _, filename := range filenames {
			send(t, stock, ours, filename)
		}
	}
	require.NoError(t, ours.Close())
	close(stop)
	claimers.Wait()

	for _, filename := range filenames {
		eventuallyNoneOpen(t, filename, baseline, 2*time.Second)
	}
}
