package requestfd

import (
	"context"

	"github.com/golang/protobuf/ptypes/empty"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/common"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/sendfd"
)

type requestFDClient struct {
	sendfd networkservice.NetworkServiceClient
}

// NewClient returns the element. Use it in place of sendfd.NewClient.
func NewClient() networkservice.NetworkServiceClient {
	return &requestFDClient{sendfd: sendfd.NewClient()}
}

func (c *requestFDClient) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	urls := urlsOf(append(request.GetMechanismPreferences(), request.GetConnection().GetMechanism()))
	conn, err := c.sendfd.Request(ctx, request, opts...)
	if err != nil {
		urls.restore()
	}
	return conn, err
}

func (c *requestFDClient) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*empty.Empty, error) {
	urls := urlsOf([]*networkservice.Mechanism{conn.GetMechanism()})
	closed, err := c.sendfd.Close(ctx, conn, opts...)
	if err != nil {
		urls.restore()
	}
	return closed, err
}

// inodeURL is one mechanism's InodeURL parameter as it was.
type inodeURL struct {
	parameters map[string]string
	url        string
}

// inodeURLs are the InodeURL parameters of some mechanisms, as they were.
type inodeURLs []inodeURL

func urlsOf(mechanisms []*networkservice.Mechanism) inodeURLs {
	var urls inodeURLs
	for _, mechanism := range mechanisms {
		if url, ok := mechanism.GetParameters()[common.InodeURL]; ok {
			urls = append(urls, inodeURL{mechanism.GetParameters(), url})
		}
	}
	return urls
}

func (urls inodeURLs) restore() {
	for _, u := range urls {
		u.parameters[common.InodeURL] = u.url
	}
}
