package fdtransport_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/edwarnicke/grpcfd"
	"github.com/golang/protobuf/ptypes/empty"
	"github.com/pkg/errors"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/networkservicemesh/api/pkg/api/networkservice"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/recvnetns/recvnetnstest"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/fdtransport"
)

// Parameters of the exchange: the client names the file it sent, the server the file it
// received and the one it sent back.
const (
	sentKey     = "sent"
	receivedKey = "received"
	backKey     = "back"
)

// Over gRPC on a unix socket, each end of ours interoperates with grpcfd at the other, as the
// forwarder does with nsmgr (it receives the client's namespace and passes it back) and with a
// stock endpoint: a file passed beside a call is received by its inode:// URL, in both
// directions, through grpcfd's client interceptors and per-call credentials.
func TestFilesPassBothWaysBetweenGrpcfdAndOurs(t *testing.T) {
	stock := grpcfd.TransportCredentials(insecure.NewCredentials())
	ours := fdtransport.TransportCredentials(insecure.NewCredentials())
	for _, ends := range []struct {
		name           string
		client, server credentials.TransportCredentials
	}{
		{"grpcfd client, our server", stock, ours},
		{"our client, grpcfd server", ours, stock},
		{"ours at both ends", ours, ours},
	} {
		t.Run(ends.name, func(t *testing.T) {
			back := newFile(t, "back")
			served := recvnetnstest.ServeWith(t, ends.server, func(server *grpc.Server) {
				networkservice.RegisterNetworkServiceServer(server, &exchange{back: back})
			})
			client := networkservice.NewNetworkServiceClient(recvnetnstest.DialWith(t, served, ends.client))
			forth := newFile(t, "forth")
			sentURL, err := grpcfd.FilenameToURL(forth)
			require.NoError(t, err)
			perCall := grpcfd.PerRPCCredentials(nil)
			sender, _ := grpcfd.FromPerRPCCredentials(perCall)
			_ = sender.SendFilename(forth) // grpcfd's reports closing its file twice: not ours to judge

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := client.Request(ctx, &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{
				Mechanism: &networkservice.Mechanism{Parameters: map[string]string{sentKey: sentURL.String()}},
			}}, grpc.PerRPCCredentials(perCall))
			require.NoError(t, err)
			require.Equal(t, inodeString(t, forth), conn.GetMechanism().GetParameters()[receivedKey], "the server received another file")

			backFiles, err := sender.RecvFileByURL(conn.GetMechanism().GetParameters()[backKey])
			require.NoError(t, err)
			select {
			case file := <-backFiles:
				requireSameFile(t, back, file)
			case <-ctx.Done():
				t.Fatal("the file the server sent back never came")
			}
		})
	}
}

// exchange receives the file a Request names and sends another back, as the forwarder's recvfd
// and replyfd do.
type exchange struct {
	back string
}

func (e *exchange) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	transceiver, ok := grpcfd.FromContext(ctx)
	if !ok {
		return nil, errors.New("the call's peer passes no descriptors")
	}
	parameters := request.GetConnection().GetMechanism().GetParameters()
	files, err := transceiver.RecvFileByURL(parameters[sentKey])
	if err != nil {
		return nil, err
	}
	select {
	case file := <-files:
		if file == nil {
			return nil, errors.New("no file received")
		}
		parameters[receivedKey] = inodeStringOf(file.Name())
		_ = file.Close()
	case <-ctx.Done():
		return nil, errors.Wrap(ctx.Err(), "waiting for the file")
	}
	backURL, err := grpcfd.FilenameToURL(e.back)
	if err != nil {
		return nil, err
	}
	_ = transceiver.SendFilename(e.back)
	parameters[backKey] = backURL.String()
	return request.GetConnection(), nil
}

func (e *exchange) Close(context.Context, *networkservice.Connection) (*empty.Empty, error) {
	return &empty.Empty{}, nil
}

func inodeString(t *testing.T, filename string) string {
	t.Helper()
	dev, ino := inodeOf(t, filename)
	return fmt.Sprintf("%d/%d", dev, ino)
}

func inodeStringOf(filename string) string {
	var stat syscall.Stat_t
	if err := syscall.Stat(filename, &stat); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d/%d", stat.Dev, stat.Ino)
}
