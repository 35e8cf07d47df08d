package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The check reads VPP's ping CLI summary: how many echoes came back, none when there is no
// summary (the ping could not leave).
func TestReceivedReadsVPPPingSummary(t *testing.T) {
	require.Equal(t, 2, received("116 bytes from 172.16.0.0: icmp_seq=1 ttl=64 time=.0412 ms\n\nStatistics: 2 sent, 2 received, 0% packet loss\n"))
	require.Equal(t, 0, received("\nStatistics: 2 sent, 0 received, 100% packet loss\n"))
	require.Equal(t, -1, received("Failed: no egress interface\n"))
}
