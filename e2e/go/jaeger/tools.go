//go:build tools

// Package tools pins the Jaeger all-in-one binary this wrapper module builds.
package tools

import _ "github.com/jaegertracing/jaeger/cmd/all-in-one"
