# e2e/node/lib.sh: the real node of the local environment (LBC_E2E_NODE=1 e2e/up), sourced by e2e/up and e2e/down.
#
# One node, "lbc-node-1": containerd 1.6 (Debian's, with runc) from our own config under e2e/.run/node, the
# kubelet and kube-scheduler built from the same Kubernetes source as the API server, a CNI bridge with
# host-local IPAM on a pod network of our own (never the emulated VPC's), a pause image built from Kubernetes'
# pause.c, and forwarders that let pods reach the API server, the AWS emulator and OpenBao (all on 127.0.0.1).
#
# Everything is named after LBC_E2E_PORT_OFFSET (OFF), so a second environment's node does not clash:
#   pod network 10.244.<OFF mod 256>.0/24, gateway .1 on bridge lbcn<OFF>; kubelet port 10250+OFF (on the gateway
#   address), kubelet healthz 10248+OFF and kube-scheduler 10259+OFF on 127.0.0.1; cgroup root /lbc-e2e-<OFF>;
#   iptables chain LBC-E2E-NODE-<OFF>; forwarders on the gateway address with the ports of what they forward to.
#
# e2e/up provides: E2E RUN PKI LOGS PIDS OFF BIN PY KUBECTL API_PORT AWS_PORT API_URL, and say die start stop alive
# pid_of wait_until write_kubeconfig. e2e/down needs only node_down (self-contained).

NODE_DIR="$RUN/node"
NODE_NAME=lbc-node-1
NODE_LABEL=lbc-e2e/real-node            # =true on the real node: tests and the scheduler select it by this label
PAUSE_VERSION=3.10.1                    # the tag Kubernetes v1.34's build/pause/Makefile gives its pause.c
PAUSE_IMAGE="lbc-e2e.local/pause:$PAUSE_VERSION"
# Settings the kubelet changes at start (protectKernelDefaults=false makes it set them; true makes it refuse to
# start): saved before the first kubelet of this machine starts and restored by node_down.
NODE_SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes"

# node_vars OFFSET: every name and port derived from the environment's port offset. node_up records the offset in
# $NODE_DIR/offset, and node_down reads it from there: it must undo what was made, whatever the caller's offset.
node_vars() {
  NODE_OFF="$1"
  NODE_NET_IDX=$((NODE_OFF % 256))
  NODE_POD_CIDR="10.244.$NODE_NET_IDX.0/24"
  NODE_GW="10.244.$NODE_NET_IDX.1"      # the bridge's address: the node's InternalIP, the forwarders' address
  NODE_BRIDGE="lbcn$NODE_OFF"
  NODE_CNI_NET="lbc-e2e-node-$NODE_OFF"
  NODE_CHAIN="LBC-E2E-NODE-$NODE_OFF"
  NODE_CGROUP_ROOT="/lbc-e2e-$NODE_OFF"
  KUBELET_PORT=$((10250 + NODE_OFF))
  KUBELET_HEALTHZ_PORT=$((10248 + NODE_OFF))
  SCHED_PORT=$((10259 + NODE_OFF))
  NODE_BAO_PORT=$((8200 + NODE_OFF))    # e2e/scripts/bao.sh's default port (started by the tests that need it)
  NODE_SOCK="$NODE_DIR/containerd.sock"
}
node_vars "${OFF:-0}"

node_ctr() { ctr --address "$NODE_SOCK" --namespace k8s.io "$@"; }

# ---- PKI ------------------------------------------------------------------------------------------------------------
# sign_cert NAME SUBJECT EXTENSIONS: an EC key and a certificate from the e2e CA, in $PKI/NAME.{key,crt}
sign_cert() {
  (
    cd "$PKI"
    printf '%s\n' "$3" >"$1.ext"
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
    chmod 600 "$1.key"
  )
}

# What the API server needs from the start for a node to join later: its kubelet client certificate (it calls
# the kubelet's API with it: logs, exec, port-forward). Made by gen_pki on every fresh start, node or not.
node_apiserver_pki() {
  sign_cert apiserver-kubelet-client "/O=system:masters/CN=lbc-e2e-apiserver-kubelet-client" \
    "$(printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth')"
}

# The node's own credentials: the kubelet's client certificate (system:node:<name> in system:nodes: the Node
# authorizer and NodeRestriction treat it as that node), its serving certificate (the API server verifies it
# with the e2e CA), and kube-scheduler's client certificate (system:kube-scheduler: the bootstrap RBAC role).
node_pki() {
  [ -s "$PKI/kubelet-client.crt" ] || sign_cert kubelet-client "/O=system:nodes/CN=system:node:$NODE_NAME" \
    "$(printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth')"
  [ -s "$PKI/kubelet-serving.crt" ] || sign_cert kubelet-serving "/CN=$NODE_NAME" \
    "$(printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:%s,DNS:%s' "$NODE_GW" "$NODE_NAME")"
  [ -s "$PKI/scheduler-client.crt" ] || sign_cert scheduler-client "/CN=system:kube-scheduler" \
    "$(printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth')"
}

# A kubeconfig with a client certificate: FILE USER CERT_NAME
write_cert_kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: lbc-e2e
  cluster:
    server: $API_URL
    certificate-authority: $PKI/ca.crt
users:
- name: $2
  user:
    client-certificate: $PKI/$3.crt
    client-key: $PKI/$3.key
contexts:
- name: lbc-e2e
  context: {cluster: lbc-e2e, user: $2}
current-context: lbc-e2e
EOF
  chmod 600 "$1"
}

# The running API server was started with what a node needs (an environment from before the node existed
# was not): the gateway address in its serving certificate and a kubelet client certificate.
node_apiserver_ready_for_node() {
  [ -s "$PKI/apiserver-kubelet-client.crt" ] \
    && openssl x509 -in "$PKI/apiserver.crt" -noout -ext subjectAltName 2>/dev/null | grep -F "IP Address:$NODE_GW" >/dev/null \
    && tr '\0' ' ' 2>/dev/null <"/proc/$(pid_of kube-apiserver)/cmdline" | grep -F -- "--enable-aggregator-routing=true" >/dev/null
}

# ---- host setup: packages, network, cgroups -------------------------------------------------------------------------
node_packages() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] && [ -x /usr/lib/cni/portmap ] \
    || missing+=(containernetworking-plugins)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v gcc >/dev/null || missing+=(gcc)
  [ -n "$(find /usr/lib -name libc.a -print -quit 2>/dev/null)" ] || missing+=(libc6-dev)
  dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || missing+=(busybox-static)
  [ "${#missing[@]}" = 0 ] && return 0
  [ "$(id -u)" = 0 ] || die "the real node needs ${missing[*]} (as root: apt-get install ${missing[*]})"
  say "installing ${missing[*]} (apt-get)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed"
}

node_network() {
  if ! ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
    ip link add "$NODE_BRIDGE" type bridge || die "cannot create bridge $NODE_BRIDGE"
  fi
  ip addr show dev "$NODE_BRIDGE" | grep -F " $NODE_GW/24 " >/dev/null || ip addr add "$NODE_GW/24" dev "$NODE_BRIDGE"
  ip link set "$NODE_BRIDGE" up
  # The gateway address serves pods (the bridge) and the host itself (lo), nobody else: the host does not
  # forward, but a packet for it arriving on another interface would be accepted (weak host model).
  if ! iptables -w -n -L "$NODE_CHAIN" >/dev/null 2>&1; then
    iptables -w -N "$NODE_CHAIN"
    iptables -w -A "$NODE_CHAIN" -i "$NODE_BRIDGE" -j RETURN
    iptables -w -A "$NODE_CHAIN" -i lo -j RETURN
    iptables -w -A "$NODE_CHAIN" -j DROP
  fi
  iptables -w -C INPUT -d "$NODE_GW/32" -j "$NODE_CHAIN" 2>/dev/null || iptables -w -I INPUT -d "$NODE_GW/32" -j "$NODE_CHAIN"
  mkdir -p "$NODE_DIR/cni/net.d" "$NODE_DIR/cni/ipam"
  # isGateway false: the bridge already holds the gateway address, and a gateway bridge would turn on the host's
  # ip_forward. Pods talk to the gateway address (local delivery) and to each other (bridged), nothing is routed.
  cat >"$NODE_DIR/cni/net.d/10-lbc-e2e.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$NODE_CNI_NET",
  "plugins": [
    {
      "type": "bridge", "bridge": "$NODE_BRIDGE", "isGateway": false, "ipMasq": false, "hairpinMode": true,
      "ipam": {
        "type": "host-local", "dataDir": "$NODE_DIR/cni/ipam",
        "ranges": [[{"subnet": "$NODE_POD_CIDR", "rangeStart": "10.244.$NODE_NET_IDX.10", "gateway": "$NODE_GW"}]],
        "routes": [{"dst": "0.0.0.0/0", "gw": "$NODE_GW"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

# The kubelet's cgroup root in every cgroup v1 hierarchy (the kubelet refuses a root that does not exist). Its
# own root keeps it away from another environment's node: a kubelet removes pod cgroups it does not know.
node_cgroups() {
  local d
  for d in /sys/fs/cgroup/*/; do
    [ -e "$d/cgroup.procs" ] || continue
    case "$d" in */unified/) continue ;; esac
    mkdir -p "$d${NODE_CGROUP_ROOT#/}"
    if [ -e "$d/cpuset.cpus" ] && [ -z "$(cat "$d${NODE_CGROUP_ROOT#/}/cpuset.cpus")" ]; then
      cat "$d/cpuset.cpus" >"$d${NODE_CGROUP_ROOT#/}/cpuset.cpus"
      cat "$d/cpuset.mems" >"$d${NODE_CGROUP_ROOT#/}/cpuset.mems"
    fi
  done
}

node_save_sysctls() {
  local f=/run/lbc-e2e-node-sysctls k
  [ -s "$f" ] && return 0
  for k in $NODE_SYSCTLS; do echo "$k=$(sysctl -n "$k")"; done >"$f.tmp" && mv "$f.tmp" "$f"
}

# ---- components -----------------------------------------------------------------------------------------------------
start_containerd() {
  mkdir -p "$NODE_DIR/containerd" "$NODE_DIR/runc"
  cat >"$NODE_DIR/containerd.toml" <<EOF
# containerd of the e2e real node (written by e2e/node/lib.sh)
version = 2
root = "$NODE_DIR/containerd/root"
state = "$NODE_DIR/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "$NODE_SOCK"
[ttrpc]
  address = "$NODE_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$NODE_DIR/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  tolerate_missing_hugetlb_controller = true
  # No CAP_SYS_RESOURCE here: an oom_score_adj below containerd's own (the sandbox's -998) would make runc's init
  # fail ("can't get final child's PID from pipe"); this clamps it to containerd's (0).
  restrict_oom_score_adj = true
  disable_hugetlb_controller = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$NODE_DIR/cni/net.d"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$NODE_DIR/runc"
EOF
  start containerd containerd --config "$NODE_DIR/containerd.toml"
  wait_until containerd 30 node_ctr version
}

start_kubelet() {
  node_pki
  mkdir -p "$NODE_DIR/kubelet" "$NODE_DIR/pod-logs"
  write_cert_kubeconfig "$NODE_DIR/kubelet.kubeconfig" "system:node:$NODE_NAME" kubelet-client
  # Pods get this as /etc/resolv.conf (dnsPolicy Default; ClusterFirst falls back to it, no cluster DNS exists):
  # no name server, so a lookup fails at once instead of timing out on the host's resolver, unreachable from pods.
  printf 'options timeout:1 attempts:1\n' >"$NODE_DIR/resolv.conf"
  cat >"$NODE_DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_GW
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$NODE_SOCK
cgroupDriver: cgroupfs
cgroupRoot: $NODE_CGROUP_ROOT
failCgroupV1: false
failSwapOn: false
makeIPTablesUtilChains: false
podLogsDir: $NODE_DIR/pod-logs
resolvConf: $NODE_DIR/resolv.conf
clusterDomain: cluster.local
maxPods: 32
serializeImagePulls: false
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, nodefs.inodesFree: 1%, imagefs.available: 1%, imagefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
  node_save_sysctls
  start kubelet "$BIN/kubelet" --config="$NODE_DIR/kubelet.yaml" --kubeconfig="$NODE_DIR/kubelet.kubeconfig" \
    --root-dir="$NODE_DIR/kubelet" --cert-dir="$NODE_DIR/kubelet/pki" --hostname-override="$NODE_NAME" \
    --node-ip="$NODE_GW" --node-labels="$NODE_LABEL=true,topology.kubernetes.io/zone=us-east-1a" --v=1
}

kubelet_ok() { curl -sf --max-time 2 "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz" | grep -x ok >/dev/null; }
node_ready() {
  [ "$(KUBECONFIG="$RUN/kubeconfig" "$KUBECTL" get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

start_scheduler() {
  node_pki
  write_cert_kubeconfig "$NODE_DIR/scheduler.kubeconfig" system:kube-scheduler scheduler-client
  # The default profile places pods on the real node only (NodeAffinity's addedAffinity joins every pod's own
  # affinity): kwok's and the tests' fake nodes have no kubelet to run them. Pods bound by name (spec.nodeName,
  # e2e/pods, kwok) or by another scheduler (the data-path agent's lbc-datapath) never reach this scheduler.
  cat >"$NODE_DIR/scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $NODE_DIR/scheduler.kubeconfig
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: $NODE_LABEL, operator: In, values: ["true"]}
EOF
  start kube-scheduler "$BIN/kube-scheduler" --config="$NODE_DIR/scheduler.yaml" \
    --authentication-kubeconfig="$NODE_DIR/scheduler.kubeconfig" --authorization-kubeconfig="$NODE_DIR/scheduler.kubeconfig" \
    --authentication-skip-lookup=true --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --profiling=false
}
sched_ok() { curl -sk --max-time 2 "https://127.0.0.1:$SCHED_PORT/healthz" | grep -x ok >/dev/null; }

start_forwarders() {
  start node-forward "$PY" "$E2E/node/forward.py" \
    --tcp "$NODE_GW:$API_PORT=127.0.0.1:$API_PORT" \
    --http "$NODE_GW:$AWS_PORT=127.0.0.1:$AWS_PORT" \
    --tcp "$NODE_GW:$NODE_BAO_PORT=127.0.0.1:$NODE_BAO_PORT"
}
forwarders_ok() { grep -c '^.* listening ' "$LOGS/node-forward.log" 2>/dev/null | grep -qx 3 && port_open "$NODE_GW" "$AWS_PORT"; }
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# ---- images ---------------------------------------------------------------------------------------------------------
# Nothing can be pulled here: both images are built locally with image/oci.py (reproducible OCI archives, cached
# under $LBC_CACHE/node-images) and imported into the node's containerd, where pods use them with
# imagePullPolicy Never (or IfNotPresent: the tags never change content).
#   PAUSE_IMAGE  the sandbox image: Kubernetes' own pause.c from the k8s.io/kubernetes module (the same source as
#                the node's binaries), compiled statically as its Makefile does, run as 65535 as upstream's image.
#   PROBE_IMAGE  for e2e/tests/e2e/real_node.rs: Debian's static busybox (httpd serving e2e/node/probe/www, whose CGI
#                scripts report the token, uid and read-only root, and call the API server and the AWS
#                emulator) and the environment's own kubectl (static), tagged by a digest of its inputs.
NODE_IMAGES="${LBC_CACHE:-$HOME/.cache/aws-lb-controller}/node-images"
PROBE_IMAGE=""

node_build_images() {
  local kube_version src tmp probe_tag
  mkdir -p "$NODE_IMAGES"
  if [ ! -s "$NODE_IMAGES/pause-$PAUSE_VERSION.tar" ]; then
    kube_version="$("$BIN/kubelet" --version | awk '{print $2}')"
    src="$(cd "$E2E/go/k8s" && GOFLAGS=-mod=mod GOTOOLCHAIN=local go list -m -f '{{.Dir}}' k8s.io/kubernetes 2>/dev/null)/build/pause/linux/pause.c"
    [ -f "$src" ] || die "pause.c not found at $src (the k8s.io/kubernetes $kube_version module: run ONLY=node e2e/scripts/build-bins.sh)"
    tmp="$(mktemp -d)" && chmod 755 "$tmp"
    gcc -Os -Wall -Werror -static -DVERSION="v$PAUSE_VERSION-$kube_version" -o "$tmp/pause" "$src" || die "compiling $src failed"
    python3 "$E2E/../image/oci.py" --layer "$tmp" --ref "$PAUSE_IMAGE" --user 65535:65535 --entrypoint '["/pause"]' \
      --compression none --out "$NODE_IMAGES/pause-$PAUSE_VERSION.tar" >/dev/null || die "packaging the pause image failed"
    rm -rf "$tmp"
  fi
  probe_tag="$( { sha256sum /bin/busybox "$BIN/kubectl" | cut -d' ' -f1
    cd "$E2E/node/probe" && find . -type f | sort | xargs sha256sum && find . | sort | xargs stat -c '%n %a'
  } | sha256sum | cut -c1-12)"
  PROBE_IMAGE="lbc-e2e.local/node-probe:$probe_tag"
  if [ ! -s "$NODE_IMAGES/node-probe-$probe_tag.tar" ]; then
    rm -f "$NODE_IMAGES"/node-probe-*.tar  # earlier versions (~60 MB each)
    tmp="$(mktemp -d)" && chmod 755 "$tmp"
    mkdir -p "$tmp/bin" "$tmp/www" "$tmp/tmp"
    cp /bin/busybox "$BIN/kubectl" "$tmp/bin/" && ln -s busybox "$tmp/bin/sh"
    cp -a "$E2E/node/probe/www/." "$tmp/www/"
    mkdir -p "$tmp/lib/probe" && cp "$E2E/node/probe/lib/env.sh" "$E2E/node/probe/lib/start.sh" "$tmp/lib/probe/"
    python3 "$E2E/../image/oci.py" --layer "$tmp" --ref "$PROBE_IMAGE" --user 65532:65532 \
      --entrypoint '["/bin/sh", "/lib/probe/start.sh"]' --env PATH=/bin --env HOME=/tmp \
      --compression none --out "$NODE_IMAGES/node-probe-$probe_tag.tar" >/dev/null || die "packaging the probe image failed"
    rm -rf "$tmp"
  fi
}

node_images() {
  local ref file
  node_build_images
  for ref in "$PAUSE_IMAGE" "$PROBE_IMAGE"; do
    [ -n "$(node_ctr images ls -q "name==$ref")" ] && continue
    case "$ref" in
      "$PAUSE_IMAGE") file="$NODE_IMAGES/pause-$PAUSE_VERSION.tar" ;;
      *) file="$NODE_IMAGES/node-probe-${ref##*:}.tar" ;;
    esac
    node_ctr images import "$file" >/dev/null || die "ctr images import $file failed"
  done
  say "images $PAUSE_IMAGE, $PROBE_IMAGE in the node's containerd"
}

# ---- up / down ------------------------------------------------------------------------------------------------------
# node_up: start or reuse the node; writes $RUN/node.env (LBC_NODE_* for e2e/.run/env).
node_up() {
  [ -x "$BIN/kubelet" ] && [ -x "$BIN/kube-scheduler" ] || die "no kubelet/kube-scheduler in $BIN (ONLY=node e2e/scripts/build-bins.sh)"
  node_packages
  mkdir -p "$NODE_DIR"
  echo "$NODE_OFF" >"$NODE_DIR/offset"
  node_network
  node_cgroups
  if alive containerd "$NODE_DIR/containerd.toml" && node_ctr version >/dev/null 2>&1; then
    say "containerd running (reused)"
  else
    stop containerd; start_containerd; say "containerd ready ($NODE_SOCK)"
  fi
  node_images
  if alive node-forward "$E2E/node/forward.py" && forwarders_ok; then
    say "node forwarders running (reused)"
  else
    stop node-forward; : >"$LOGS/node-forward.log"; start_forwarders
    wait_until node-forward 20 forwarders_ok
    say "node forwarders on $NODE_GW (API $API_PORT, AWS $AWS_PORT, OpenBao $NODE_BAO_PORT)"
  fi
  if alive kube-scheduler "$NODE_DIR/scheduler.yaml" && sched_ok; then
    say "kube-scheduler running (reused)"
  else
    stop kube-scheduler; start_scheduler; wait_until kube-scheduler 60 sched_ok; say "kube-scheduler ready"
  fi
  if alive kubelet "$NODE_DIR/kubelet.yaml" && kubelet_ok; then
    say "kubelet running (reused)"
  else
    stop kubelet; start_kubelet; wait_until kubelet 60 kubelet_ok; say "kubelet started"
  fi
  wait_until kubelet 90 node_ready
  # The API server's TaintNodesByCondition admission gives every new node node.kubernetes.io/not-ready:NoSchedule;
  # the node-lifecycle controller, which takes it off a Ready node, does not run (it would evict kwok's nodes).
  # So it is taken off here, once the node is Ready (kwok's nodes keep theirs: their pods are bound by name).
  KUBECONFIG="$RUN/kubeconfig" "$KUBECTL" taint node "$NODE_NAME" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
  # Out of every load balancer: the node has no EC2 instance in the emulator, and the instance-mode tests count
  # the nodes they expect. Remove the label where a scenario wants the real node as an instance target.
  KUBECONFIG="$RUN/kubeconfig" "$KUBECTL" label node "$NODE_NAME" --overwrite \
    node.kubernetes.io/exclude-from-external-load-balancers=true >/dev/null
  say "node $NODE_NAME Ready (InternalIP $NODE_GW, pods in $NODE_POD_CIDR)"
  {
    echo "export LBC_NODE_NAME='$NODE_NAME'"
    echo "export LBC_NODE_LABEL='$NODE_LABEL=true'"
    echo "export LBC_NODE_HOST_IP='$NODE_GW'"
    echo "export LBC_NODE_POD_CIDR='$NODE_POD_CIDR'"
    echo "export LBC_NODE_API_URL='https://$NODE_GW:$API_PORT'"
    echo "export LBC_NODE_AWS_URL='http://$NODE_GW:$AWS_PORT'"
    echo "export LBC_NODE_BAO_URL='http://$NODE_GW:$NODE_BAO_PORT'"
    echo "export LBC_NODE_CONTAINERD_SOCK='$NODE_SOCK'"
    echo "export LBC_NODE_PAUSE_IMAGE='$PAUSE_IMAGE'"
    echo "export LBC_NODE_PROBE_IMAGE='$PROBE_IMAGE'"
  } >"$RUN/node.env"
}

# node_running: some process of the node is alive (e2e/up without LBC_E2E_NODE=1 leaves a running node alone)
node_running() { alive kubelet "$NODE_DIR/kubelet.yaml" || alive containerd "$NODE_DIR/containerd.toml"; }

# node_down: stops the node and undoes what node_up did to the host. Order matters: the kubelet first (it would
# restart containers), then every container (runc), containerd and its shims, then the mounts (pod volumes,
# network namespaces, container root filesystems) before anything under e2e/.run/node may be deleted.
node_down() {
  local name pid f id mnt left d k v
  [ -d "$NODE_DIR" ] || return 0
  [ -s "$NODE_DIR/offset" ] && node_vars "$(cat "$NODE_DIR/offset")"
  # ~2 s each to exit, so at once (waiting for these jobs only: e2e/up's servers are background jobs too)
  local stoppers=()
  for name in kube-scheduler node-forward kubelet; do node_stop "$name" & stoppers+=($!); done
  wait "${stoppers[@]}"
  if [ -d "$NODE_DIR/runc/k8s.io" ]; then
    for id in $(runc --root "$NODE_DIR/runc/k8s.io" list -q 2>/dev/null); do
      runc --root "$NODE_DIR/runc/k8s.io" delete --force "$id" >/dev/null 2>&1 || true
    done
  fi
  node_stop containerd
  # The shims containerd started (each records its PID in the task's state directory).
  for f in "$NODE_DIR"/containerd/state/io.containerd.runtime.v2.task/*/*/shim.pid; do
    [ -s "$f" ] || continue
    pid="$(cat "$f")"
    tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -F -- "$NODE_SOCK" >/dev/null && kill -KILL "$pid" 2>/dev/null || true
  done
  # What is left in our cgroups is ours (containers whose shim died first): kill it by PID.
  for f in /sys/fs/cgroup/*"$NODE_CGROUP_ROOT"/cgroup.procs; do
    [ -e "$f" ] || continue
    find "$(dirname "$f")" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u | while read -r pid; do
      kill -KILL "$pid" 2>/dev/null || true
    done
  done
  # Mounts below the node directory, deepest first (a lazy unmount when a plain one is refused).
  for _ in 1 2 3; do
    left=0
    while read -r mnt; do
      umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true; left=1
    done < <(awk -v d="$NODE_DIR/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r)
    [ "$left" = 0 ] && break
  done
  if awk -v d="$NODE_DIR/" 'index($5, d) == 1 {found=1} END {exit !found}' /proc/self/mountinfo; then
    echo "[node] ERROR: still mounted below $NODE_DIR (not deleting it):" >&2
    awk -v d="$NODE_DIR/" 'index($5, d) == 1 {print "  " $5}' /proc/self/mountinfo >&2
    return 1
  fi
  ip link del "$NODE_BRIDGE" 2>/dev/null || true
  while iptables -w -D INPUT -d "$NODE_GW/32" -j "$NODE_CHAIN" 2>/dev/null; do :; done
  iptables -w -F "$NODE_CHAIN" 2>/dev/null && iptables -w -X "$NODE_CHAIN" 2>/dev/null || true
  # libcni's result cache (outside our directories in containerd 1.6): our network's, and the loopback results
  # of our sandboxes (named after their IDs, the task directories of our containerd).
  rm -f /var/lib/cni/results/"$NODE_CNI_NET"-* 2>/dev/null || true
  for d in "$NODE_DIR"/containerd/state/io.containerd.runtime.v2.task/k8s.io/*/; do
    [ -d "$d" ] && rm -f "/var/lib/cni/results/cni-loopback-$(basename "$d")-lo"
  done
  for d in /sys/fs/cgroup/*"$NODE_CGROUP_ROOT"; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  # The kernel settings the kubelet changed, once no kubelet of any environment runs any more.
  if [ -s /run/lbc-e2e-node-sysctls ] && ! pgrep -f -- '/kubelet --config=.*/node/kubelet.yaml' >/dev/null; then
    while IFS== read -r k v; do sysctl -qw "$k=$v" 2>/dev/null || true; done </run/lbc-e2e-node-sysctls
    rm -f /run/lbc-e2e-node-sysctls
  fi
  rm -rf "$NODE_DIR"
  rm -f "$RUN/node.env"
}

# node_stop NAME: TERM the process of PID file NAME (only if it still is ours), wait up to 10 s, KILL.
node_stop() {
  local pid i
  pid="$(cat "$RUN/pids/$1.pid" 2>/dev/null || true)"
  if [ -n "$pid" ] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -F -- "$E2E/" >/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$RUN/pids/$1.pid"
}
