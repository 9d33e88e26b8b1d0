// Command vault-aws-plugin serves Vault's AWS secrets engine (github.com/hashicorp/vault/builtin/logical/aws,
// Vault v1.14.x: MPL-2.0, the release line OpenBao was forked from) as an external secrets-engine plugin, so the
// e2e OpenBao server can mount the real engine at aws/ and point it at the AWS emulator. OpenBao ships no AWS
// engine and its own plugin module cannot be fetched here; see docs/credentials.md, "Testing".
//
// Test tool only: built by e2e/scripts/build-vault-plugin.sh, never shipped. go.mod pins the sdk module to the
// version Vault v1.14.8's go.mod requires: Vault builds against ./sdk through a replace directive, which does
// not apply to a module depending on it.
package main

import (
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/vault/builtin/logical/aws"
	"github.com/hashicorp/vault/sdk/plugin"
)

func main() {
	// No TLS provider: OpenBao starts plugins with automatic mutual TLS (go-plugin AutoMTLS), so the
	// pre-AutoMTLS handshake flags Vault's own wrapper parses are not needed.
	err := plugin.ServeMultiplex(&plugin.ServeOpts{BackendFactoryFunc: aws.Factory})
	if err != nil {
		hclog.New(&hclog.LoggerOptions{Name: "vault-aws-plugin"}).Error("plugin stopped", "error", err)
		os.Exit(1)
	}
}
