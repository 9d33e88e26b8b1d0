// Package lbcconformance runs the upstream Gateway API conformance suite against our controller in the e2e
// environment. The suite runs on the host (the kube-apiserver answers on the host's 127.0.0.1); the Gateways'
// addresses live in the test VPC's network namespace, which the host never routes to, so every HTTP connection the
// suite makes is dialled from inside that namespace (vpcdial.go). Everything else is the suite's own: its flags, its
// manifests, its report.
package lbcconformance

import (
	"os"
	"testing"

	"sigs.k8s.io/gateway-api/conformance"
	"sigs.k8s.io/gateway-api/conformance/utils/roundtripper"
)

func TestConformance(t *testing.T) {
	if os.Getenv(EnvNetns) == "" {
		t.Skipf("%s is not set: the suite runs through the e2e runner (cargo test -p lbc-e2e --test e2e conformance), "+
			"which brings up the VPC namespace, the data plane and the controller first", EnvNetns)
	}
	opts := conformance.DefaultOptions(t)
	dial, err := vpcDialerFromEnv(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	opts.RoundTripper = &roundtripper.DefaultRoundTripper{
		Debug:             opts.Debug,
		TimeoutConfig:     opts.TimeoutConfig,
		CustomDialContext: dial,
	}
	conformance.RunConformanceWithOptions(t, opts)
}
