// Package kind holds the shipping checks of forwarder-vpp.
//
// Two kinds of tests live here. Static ones run everywhere: they parse the Dockerfile and the
// Kubernetes manifests under deployments/ and test/kind/testdata/ and check what a wrong edit would
// silently break (the build stage compiles the module root, the entrypoint is the forwarder, the
// DaemonSet keeps the stock name and selector, every environment variable is one the forwarder reads).
// The end-to-end test needs Docker and kind: it builds the image, creates a kind cluster, installs
// SPIRE and NSM basic with this forwarder and runs the kernel2kernel, kernel2vxlan2kernel and
// policy-route scenarios. Without Docker or kind it skips and says which one is missing.
package kind
