package lbcconformance

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Environment of the dialer, set by the e2e runner (e2e/tests/e2e/conformance.rs).
const (
	// EnvNetns is the VPC network namespace's file (/run/netns/NAME) the Gateways' addresses live in.
	EnvNetns = "LBC_CONFORMANCE_NETNS"
	// EnvHosts is the hosts file the data-plane fleet keeps: "ADDRESS NAME" per load balancer.
	EnvHosts = "LBC_CONFORMANCE_HOSTS"
)

type dialFunc = func(ctx context.Context, network, address string) (net.Conn, error)

// vpcDialerFromEnv returns a dialer that resolves names through the fleet's hosts file and opens every connection
// from inside the VPC namespace.
func vpcDialerFromEnv(getenv func(string) string) (dialFunc, error) {
	netns, hosts := getenv(EnvNetns), getenv(EnvHosts)
	if netns == "" || hosts == "" {
		return nil, fmt.Errorf("%s=%q and %s=%q: both must be set (the VPC namespace file and the data plane's "+
			"hosts file); run the suite through e2e/tests/e2e/conformance.rs", EnvNetns, netns, EnvHosts, hosts)
	}
	if _, err := os.Stat(netns); err != nil {
		return nil, fmt.Errorf("%s: the VPC namespace file: %w", EnvNetns, err)
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, fmt.Errorf("dialling %q: %w", address, err)
		}
		ip := net.ParseIP(host)
		if ip == nil {
			resolved, err := lookupHosts(hosts, host)
			if err != nil {
				return nil, err
			}
			ip = resolved
		}
		return dialInNetns(ctx, netns, network, net.JoinHostPort(ip.String(), port))
	}, nil
}

// lookupHosts finds name in an /etc/hosts-format file (read anew each time: the fleet rewrites it as load
// balancers come and go). Names compare case-insensitively, as DNS does.
func lookupHosts(path, name string) (net.IP, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("resolving %q: reading the data plane's hosts file: %w", name, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		for _, n := range fields[1:] {
			if strings.EqualFold(n, name) {
				if ip := net.ParseIP(fields[0]); ip != nil {
					return ip, nil
				}
				return nil, fmt.Errorf("resolving %q: %s names it with address %q, expected an IP", name, path, fields[0])
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("resolving %q: reading %s: %w", name, path, err)
	}
	return nil, fmt.Errorf("resolving %q: no load balancer of that DNS name is served by the data plane yet "+
		"(%s lists the served ones)", name, path)
}

// dialInNetns opens the connection from a thread moved into the namespace: a socket belongs to the namespace it
// was created in, so the connection keeps working after the thread moves back.
func dialInNetns(ctx context.Context, netnsPath, network, address string) (net.Conn, error) {
	type result struct {
		conn net.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		conn, err, restored := dialFromNamespace(ctx, netnsPath, network, address)
		if restored {
			// A thread still in the VPC namespace must not run other goroutines: leaving it locked makes the
			// runtime end it with this goroutine.
			runtime.UnlockOSThread()
		}
		done <- result{conn, err}
	}()
	r := <-done
	return r.conn, r.err
}

func dialFromNamespace(ctx context.Context, netnsPath, network, address string) (net.Conn, error, bool) {
	own, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, fmt.Errorf("dialling %s: opening this thread's namespace: %w", address, err), true
	}
	defer own.Close()
	target, err := os.Open(netnsPath)
	if err != nil {
		return nil, fmt.Errorf("dialling %s: opening the VPC namespace %s: %w", address, netnsPath, err), true
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("dialling %s: entering the VPC namespace %s (root needed): %w", address, netnsPath, err), true
	}
	var d net.Dialer
	conn, dialErr := d.DialContext(ctx, network, address)
	if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
		if conn != nil {
			conn.Close()
		}
		return nil, fmt.Errorf("dialling %s: leaving the VPC namespace: %w", address, err), false
	}
	if dialErr != nil {
		return nil, fmt.Errorf("dialling %s in the VPC namespace %s: %w", address, netnsPath, dialErr), true
	}
	return conn, nil, true
}
