// Package kind holds the shipping checks of forwarder-vpp.
//
// Static ones run everywhere (make test): they parse the Dockerfile, the Makefile's release
// targets and the Kubernetes manifests under deployments/ and test/kind/testdata/, and compare
// the manifests with the stock v1.18 install (read from a reference copy, STOCK_REFERENCE_DIR;
// those comparisons skip without it), rendering both install paths with kubectl's kustomize.
// The end-to-end test needs Docker and kind and runs with make kind-e2e: it builds the image,
// creates a kind cluster, installs SPIRE, then NSM by the image-only path and by the full overlay
// in turn, and runs the kernel2kernel, kernel2vxlan2kernel and policy-route scenarios on each.
// Under make test it skips; asked for with KIND_E2E=1 where Docker or kind is missing, it fails
// naming what is missing.
package kind
