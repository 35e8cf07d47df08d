package fdtransport_test

import (
	"os"
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

// grpcfd's SendFilename closes its file twice, once at once and once when the descriptor has gone,
// and reports the second close's error as the send's: an endpoint's sendfd that sees it in time
// fails a Request whose answer was fine. Ours closes the file once and reports nothing.
func TestSentFilenameIsClosedOnceWhereGrpcfdReportsItsSecondClose(t *testing.T) {
	stock, ours := stockToOurs(t)
	for _, pair := range []struct {
		name     string
		from, to endpoint
		wantErr  error
	}{
		{"grpcfd", stock, ours, os.ErrClosed},
		{"ours", ours, stock, nil},
	} {
		t.Run(pair.name, func(t *testing.T) {
			filename := newFile(t, pair.name)
			sent := pair.from.SendFilename(filename)
			_, err := pair.from.Write([]byte{0})
			require.NoError(t, err)
			_, err = pair.to.Read(make([]byte, 1))
			require.NoError(t, err)
			requireSameFile(t, filename, claim(t, pair.to, filename, time.Second))

			var reported []error
			for waited := time.After(5 * time.Second); ; {
				select {
				case err, open := <-sent:
					if open {
						reported = append(reported, err)
						continue
					}
				case <-waited:
					t.Fatal("the send was never reported")
				}
				break
			}
			if pair.wantErr == nil {
				require.Empty(t, reported)
				return
			}
			require.Len(t, reported, 1)
			require.ErrorIs(t, reported[0], pair.wantErr)
		})
	}
}
