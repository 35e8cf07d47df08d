// Package config reads the forwarder's NSM_* environment variables: the stock cmd-forwarder-vpp
// v1.18 set (minus SR-IOV) plus NSM_KERNEL_INTERFACE_TYPE. Every bad value is reported as one line
// naming the variable and the value, before anything is started.
package config
