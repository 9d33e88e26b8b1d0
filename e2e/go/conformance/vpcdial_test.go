package lbcconformance

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLookupHostsFindsTheFleetsNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	body := "# served by lbc-dataplane fleet\n10.0.255.1 k8s-a-1.us-east-1.elb.amazonaws.com\n10.0.255.2 k8s-B-2.us-east-1.elb.amazonaws.com other\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"k8s-a-1.us-east-1.elb.amazonaws.com": "10.0.255.1",
		"K8S-b-2.us-east-1.elb.amazonaws.com": "10.0.255.2",
		"other":                               "10.0.255.2",
	} {
		ip, err := lookupHosts(path, name)
		if err != nil || ip.String() != want {
			t.Errorf("lookupHosts(%q) = %v, %v; want %s", name, ip, err, want)
		}
	}
	if _, err := lookupHosts(path, "missing.example.com"); err == nil || !strings.Contains(err.Error(), "no load balancer") {
		t.Errorf("an unknown name must fail with the reason, got %v", err)
	}
}

func TestDialerNeedsItsEnvironment(t *testing.T) {
	_, err := vpcDialerFromEnv(func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), EnvNetns) {
		t.Fatalf("want an error naming %s, got %v", EnvNetns, err)
	}
}

// The namespace switch for real, into this process's own namespace (entering needs CAP_SYS_ADMIN: root).
func TestDialInNetnsConnectsAndRestoresTheThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setns needs root")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 lb.example.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{EnvNetns: "/proc/self/ns/net", EnvHosts: hosts}
	dial, err := vpcDialerFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	conn, err := dial(context.Background(), "tcp", net.JoinHostPort("lb.example.com", port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	buf, err := io.ReadAll(conn)
	if err != nil || string(buf) != "hi" {
		t.Fatalf("read %q, %v; want \"hi\"", buf, err)
	}
	if _, err := dial(context.Background(), "tcp", "missing.example.com:80"); err == nil {
		t.Fatal("an unknown name must not be dialled")
	}
}
