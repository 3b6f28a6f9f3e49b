#!/usr/bin/env bash
# Installs what podipam's test suite needs on a fresh Debian machine (run as root):
# the reference CNI plugins, etcd, iproute2, ping, openssl (the TLS tests make their
# certificates with it), Chromium, containerd + runc + busybox-static (the CRI tests), prometheus + promtool (the alert rules), strace (a test counts fsyncs) and, where no kubectl exists, kubectl (the manifest tests render
# deploy/ with `kubectl kustomize`), mmdebstrap and skopeo (the image: npm run image) from Debian, then npm packages.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
[ -x /usr/lib/cni/host-local ] || need+=(containernetworking-plugins)
command -v etcd >/dev/null || need+=(etcd-server)
command -v ip >/dev/null || need+=(iproute2)
command -v ping >/dev/null || need+=(iputils-ping)
command -v iptables-restore >/dev/null || need+=(iptables)    # the reference portmap plugin, podipam masquerade (in test namespaces)
command -v cc >/dev/null || need+=(gcc libc6-dev)               # the native CNI shim (static)
command -v musl-gcc >/dev/null || need+=(musl-tools)           # the shim linked with musl: it starts ~0.3 ms sooner (scripts/shim-cc.mjs)
command -v flock >/dev/null || need+=(util-linux)               # tests hold a directory lock as host-local would
command -v openssl >/dev/null || need+=(openssl)
command -v nft >/dev/null || need+=(nftables)                  # the partition rig drops frames on its own bridge
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v kubectl >/dev/null || need+=(kubernetes-client)   # kubectl kustomize deploy/
command -v containerd >/dev/null || need+=(containerd)         # the CRI tests drive a real runtime
command -v runc >/dev/null || need+=(runc)
command -v promtool >/dev/null || need+=(prometheus)           # the alert rules' tests and the Prometheus end-to-end test
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)         # npm run image: the image's Debian base, no daemon
command -v skopeo >/dev/null || need+=(skopeo)                 # the image tests read the OCI archive with a second tool
command -v strace >/dev/null || need+=(strace)               # a test counts the fsyncs of a throwaway SQLite store
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || need+=(busybox-static)   # the pause image: one static busybox
if [ ${#need[@]} -gt 0 ]; then
  echo "installing Debian packages: ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# Debian's etcd-server package starts a system etcd on 2379, and its prometheus package (on a
# machine with systemd) a system Prometheus on 9090; the tests start their own on free ports.
npm ci --no-audit --no-fund
