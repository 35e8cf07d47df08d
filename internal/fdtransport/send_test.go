package fdtransport_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sdk's sendfd looks at the channel once, right after queueing, and reads a closed one as a
// failure without error, upon which it skips swapping the file:// URL for the inode:// one. A
// write for another call on the same connection may send the descriptor in that instant: the
// channel must not look closed then.
func TestSentDescriptorIsNotReportedAtOnce(t *testing.T) {
	stock, ours := stockToOurs(t)
	filename := newFile(t, "sent")

	sent := ours.SendFilename(filename)
	_, err := ours.Write([]byte{0})
	require.NoError(t, err)
	select {
	case err, open := <-sent:
		t.Fatalf("the send was reported as soon as it happened (error %v, channel open %v): sdk's sendfd would skip the URL swap", err, open)
	default:
	}

	_, err = stock.Read(make([]byte, 1))
	require.NoError(t, err)
	requireSameFile(t, filename, claim(t, stock, filename, time.Second))
	select {
	case err, open := <-sent:
		require.NoError(t, err)
		require.False(t, open, "a successful send reports nothing")
	case <-time.After(5 * time.Second):
		t.Fatal("a successful send was never reported")
	}
}
