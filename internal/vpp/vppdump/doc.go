// Package vppdump reads VPP's dump replies: a *_dump request answers with a stream of details
// records that ends with io.EOF, and every caller that wants them all reads it the same way.
package vppdump
