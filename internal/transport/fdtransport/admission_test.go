package fdtransport_test

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"testing"
	"time"

	"github.com/edwarnicke/grpcfd"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/networkservicemesh/api/pkg/api/networkservice"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/recvnetns/recvnetnstest"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/fdtransport"
	"github.com/nsmfwd/forwarder-vpp/internal/transport/svid/svidtest"
)

func serverTLS(identity *svidtest.Identity) credentials.TransportCredentials {
	config := tlsconfig.MTLSServerConfig(identity, identity, tlsconfig.AuthorizeAny())
	config.MinVersion = tls.VersionTLS12
	return credentials.NewTLS(config)
}

func clientTLS(identity *svidtest.Identity) credentials.TransportCredentials {
	config := tlsconfig.MTLSClientConfig(identity, identity, tlsconfig.AuthorizeAny())
	config.MinVersion = tls.VersionTLS12
	return credentials.NewTLS(config)
}

// sendRaw writes b with the descriptors of filenames beside it, as a peer that speaks no TLS can.
func sendRaw(t *testing.T, to net.Conn, b []byte, filenames ...string) {
	t.Helper()
	var fds []int
	for _, filename := range filenames {
		file, err := os.Open(filename)
		require.NoError(t, err)
		defer func() { _ = file.Close() }()
		fds = append(fds, int(file.Fd()))
	}
	_, _, err := to.(*net.UnixConn).WriteMsgUnix(b, unix.UnixRights(fds...), nil)
	require.NoError(t, err)
}

// A peer that sends descriptors and then stalls its TLS handshake (or never speaks TLS at all)
// gets none of them held: they are closed as they arrive, not kept for the retention.
func TestNoDescriptorIsHeldFromAPeerThatHasNotCompletedTheHandshake(t *testing.T) {
	domain := svidtest.NewTrustDomain(t, "test.nsm")
	ours := fdtransport.TransportCredentials(serverTLS(domain.Issue("/forwarder")), fdtransport.WithRetention(time.Hour))
	peer, server := socketPair(t)
	handshake := make(chan error, 1)
	go func() {
		_, _, err := ours.ServerHandshake(server)
		handshake <- err
	}()
	first, second := newFile(t, "netns-1"), newFile(t, "netns-2")
	baseline, _ := openDescriptors(t, first)

	// The first bytes of a TLS record header, then a lone byte: the handshake waits for more.
	sendRaw(t, peer, []byte{0x16, 0x03}, first)
	sendRaw(t, peer, []byte{0x01}, second)
	eventuallyNoneOpen(t, first, baseline, 2*time.Second)
	eventuallyNoneOpen(t, second, baseline, 2*time.Second)

	require.NoError(t, peer.Close())
	require.Error(t, <-handshake, "a handshake that never completed succeeded")
}

// With mutual TLS, descriptors pass once the handshake is done: every one a Request needs, even
// when the Request follows the handshake at once.
func TestDescriptorsPassOverMutualTLS(t *testing.T) {
	domain := svidtest.NewTrustDomain(t, "test.nsm")
	served := recvnetnstest.ServeWith(t, fdtransport.TransportCredentials(serverTLS(domain.Issue("/forwarder"))), func(server *grpc.Server) {
		networkservice.RegisterNetworkServiceServer(server, &exchange{back: newFile(t, "back")})
	})
	for i := range 5 {
		// A new connection each time: the first Request rides right behind the handshake.
		client := networkservice.NewNetworkServiceClient(recvnetnstest.DialWith(t, served, grpcfd.TransportCredentials(clientTLS(domain.Issue("/nsmgr")))))
		forth := newFile(t, "forth")
		sentURL, err := grpcfd.FilenameToURL(forth)
		require.NoError(t, err)
		perCall := grpcfd.PerRPCCredentials(nil)
		sender, _ := grpcfd.FromPerRPCCredentials(perCall)
		_ = sender.SendFilename(forth)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, err := client.Request(ctx, &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{
			Mechanism: &networkservice.Mechanism{Parameters: map[string]string{sentKey: sentURL.String()}},
		}}, grpc.PerRPCCredentials(perCall))
		cancel()
		require.NoError(t, err, "Request %d", i)
		require.Equal(t, inodeString(t, forth), conn.GetMechanism().GetParameters()[receivedKey])
	}
}

// A peer that floods descriptors holds no more than its cap, and all peers together no more than
// the total: the rest are closed as they arrive, and a claim of one ends empty at once instead of
// waiting out the retention. What a closed connection held is another peer's to take.
func TestAFloodingPeerHoldsNoMoreThanTheCaps(t *testing.T) {
	budget := fdtransport.NewBudget(3, 5)
	stock, ours := stockToOurs(t, fdtransport.WithRetention(time.Hour), fdtransport.WithBudget(budget))
	var files []string
	for range 5 {
		filename := newFile(t, "netns")
		files = append(files, filename)
		send(t, stock, ours, filename)
	}
	for i, filename := range files {
		_, held := openDescriptors(t, filename)
		require.Equal(t, map[bool]int{true: 1, false: 0}[i < 3], held, "descriptors held of file %d", i)
	}
	start := time.Now()
	require.Nil(t, claim(t, ours, files[3], 5*time.Second), "a refused descriptor was handed out")
	require.Less(t, time.Since(start), time.Second, "the claim of a refused descriptor waited")
	requireSameFile(t, files[0], claim(t, ours, files[0], time.Second))

	otherStock, other := stockToOurs(t, fdtransport.WithRetention(time.Hour), fdtransport.WithBudget(budget))
	more := []string{newFile(t, "netns"), newFile(t, "netns"), newFile(t, "netns")}
	for _, filename := range more {
		send(t, otherStock, other, filename)
	}
	_, held := openDescriptors(t, more[2])
	require.Zero(t, held, "the total cap let a sixth descriptor be held")
	requireSameFile(t, more[1], claim(t, other, more[1], time.Second))

	require.NoError(t, ours.Close())
	send(t, otherStock, other, more[2])
	requireSameFile(t, more[2], claim(t, other, more[2], time.Second))
}

// tlsPair runs both handshakes of a mutual-TLS connection over a unix socket pair, ours at both
// ends, and returns the transceivers under the TLS connections with the TLS connections.
func tlsPair(t *testing.T, client, server credentials.TransportCredentials) (clientTLS, serverTLS net.Conn, clientFD, serverFD endpoint) {
	t.Helper()
	clientRaw, serverRaw := socketPair(t)
	type result struct {
		conn net.Conn
		err  error
	}
	served := make(chan result, 1)
	go func() {
		conn, _, err := server.ServerHandshake(serverRaw)
		served <- result{conn, err}
	}()
	clientConn, _, err := client.ClientHandshake(context.Background(), "forwarder", clientRaw)
	require.NoError(t, err)
	s := <-served
	require.NoError(t, s.err)
	t.Cleanup(func() {
		_ = clientConn.Close()
		_ = s.conn.Close()
	})
	return clientConn, s.conn, clientConn.(*tls.Conn).NetConn().(endpoint), s.conn.(*tls.Conn).NetConn().(endpoint)
}

// The per-peer cap counts a peer by its SPIFFE ID, across its connections.
func TestThePeerCapCountsASpiffeIDAcrossConnections(t *testing.T) {
	domain := svidtest.NewTrustDomain(t, "test.nsm")
	nsmgr := fdtransport.TransportCredentials(clientTLS(domain.Issue("/nsmgr")))
	ours := fdtransport.TransportCredentials(serverTLS(domain.Issue("/forwarder")), fdtransport.WithRetention(time.Hour),
		fdtransport.WithBudget(fdtransport.NewBudget(2, 10)))
	sendOver := func(from, to net.Conn, sender endpoint, filename string) {
		file, err := os.Open(filename)
		require.NoError(t, err)
		sent := sender.SendFile(file)
		require.NoError(t, file.Close())
		_, err = from.Write([]byte{0})
		require.NoError(t, err)
		select {
		case err := <-sent: // a success is reported a second later: not worth the wait
			require.NoError(t, err)
		default:
		}
		_, err = to.Read(make([]byte, 1))
		require.NoError(t, err)
	}
	files := []string{newFile(t, "netns"), newFile(t, "netns"), newFile(t, "netns")}
	firstClient, firstServer, firstSender, firstReceiver := tlsPair(t, nsmgr, ours)
	secondClient, secondServer, secondSender, secondReceiver := tlsPair(t, nsmgr, ours)
	sendOver(firstClient, firstServer, firstSender, files[0])
	sendOver(secondClient, secondServer, secondSender, files[1])
	sendOver(secondClient, secondServer, secondSender, files[2])

	requireSameFile(t, files[0], claim(t, firstReceiver, files[0], time.Second))
	requireSameFile(t, files[1], claim(t, secondReceiver, files[1], time.Second))
	require.Nil(t, claim(t, secondReceiver, files[2], time.Second), "a third descriptor of one SPIFFE ID was held")

	otherPeer := fdtransport.TransportCredentials(clientTLS(domain.Issue("/nsmgr-2")))
	otherClient, otherServer, otherSender, otherReceiver := tlsPair(t, otherPeer, ours)
	sendOver(otherClient, otherServer, otherSender, files[2])
	requireSameFile(t, files[2], claim(t, otherReceiver, files[2], time.Second))
}
