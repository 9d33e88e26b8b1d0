#!/usr/bin/env bash
# image/rootfs.sh DEST: assembles the controller image's runtime root filesystem in DEST (absent or empty) from
# the Debian 12 packages of image/packages.txt, on a Debian 12 machine with apt lists (apt-get update):
#   - downloads each package (apt-get download) into a cache checked against the apt lists' SHA-256
#     ($LBC_IMAGE_DEB_CACHE, default ~/.cache/aws-lb-controller/image/debs) and extracts it (dpkg-deb -x), without
#     running maintainer scripts; its control fields go to /var/lib/dpkg/status.d/<package> (what image scanners
#     read to list the packages and versions of a distroless image);
#   - /etc/ssl/certs/ca-certificates.crt: every certificate of the ca-certificates package, in byte order of
#     their paths (what update-ca-certificates would write, without running it);
#   - /etc/passwd and /etc/group (root, nobody, nonroot 65532:65532), /etc/nsswitch.conf, /home/nonroot;
#   - removes what a process never reads: documentation (each package's copyright file stays), man and info
#     pages, lintian overrides, base-files' shell profiles and motd, update-ca-certificates and the individual
#     certificates, glibc's iconv modules (gconv);
#   - as root, owners and modes from image/ownership.txt (everything else 0:0); with SOURCE_DATE_EPOCH set,
#     every mtime set to it.
# The Dockerfile's rootfs stage and the offline image/build both run this script on the same package list:
# that is what keeps the two images' contents equal (docs/image.md).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PACKAGES="$HERE/packages.txt"
OWNERSHIP="$HERE/ownership.txt"
CACHE="${LBC_IMAGE_DEB_CACHE:-${HOME:-/root}/.cache/aws-lb-controller/image/debs}"

die() { echo "image/rootfs.sh: $*" >&2; exit 1; }
[ "$#" -eq 1 ] && [ "${1:0:1}" != "-" ] || die "usage: image/rootfs.sh DEST (DEST absent or empty)"
DEST="$1"
if [ -e "$DEST" ] && [ -n "$(ls -A "$DEST")" ]; then
  die "DEST $DEST is not empty: give a new directory (the root filesystem is assembled from nothing)"
fi
# shellcheck disable=SC1091
. /etc/os-release
[ "${ID:-}" = debian ] && [ "${VERSION_ID:-}" = 12 ] \
  || die "this machine is ${PRETTY_NAME:-unknown}, expected Debian 12 (bookworm): $PACKAGES names Debian 12 packages (the Dockerfile's rootfs stage runs on debian:bookworm-slim)"
for t in apt-get dpkg-deb sha256sum; do command -v "$t" >/dev/null || die "$t is missing (Debian's apt, dpkg and coreutils)"; done

mapfile -t packages < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$PACKAGES" | grep -v '^$')
[ "${#packages[@]}" -gt 0 ] || die "$PACKAGES lists no package"
mkdir -p "$CACHE" "$DEST"
DEST="$(cd "$DEST" && pwd)"

# Downloads as root without apt's _apt sandbox user (which may not write to the cache).
APT=(apt-get -q -o APT::Sandbox::User=root)
# One line per package: 'URI' FILE SIZE SHA256:HEX (one apt call for all: each costs a second). Without apt lists
# there is no candidate.
if ! uris="$("${APT[@]}" download --print-uris "${packages[@]}" 2>&1)"; then
  die "apt has no candidate for a package of $PACKAGES (${uris##*E: }); run apt-get update first, on Debian 12"
fi
debs=()
for spec in "${packages[@]}"; do
  name="${spec%%=*}"
  read -r _ file _ sum <<<"$(grep -F " ${name}_" <<<"$uris" | head -n 1)"
  sum="${sum#SHA256:}"
  [[ "$file" == "${name}_"*.deb && "$sum" =~ ^[0-9a-f]{64}$ ]] \
    || die "package $spec: no download line for it from apt-get download --print-uris (got: $uris)"
  if ! { [ -f "$CACHE/$file" ] && echo "$sum  $CACHE/$file" | sha256sum -c --status; }; then
    (cd "$CACHE" && "${APT[@]}" download "$spec" >/dev/null) || die "package $spec: apt-get download failed"
    echo "$sum  $CACHE/$file" | sha256sum -c --status \
      || die "package $spec: $CACHE/$file does not have the SHA-256 of the apt lists ($sum); delete it and retry"
  fi
  debs+=("$CACHE/$file")
done

mkdir -p "$DEST/var/lib/dpkg/status.d"
for deb in "${debs[@]}"; do
  dpkg-deb -x "$deb" "$DEST"
  name="$(dpkg-deb -f "$deb" Package)"
  # The control fields as dpkg's status database holds them for an installed package.
  { echo "Package: $name"; echo "Status: install ok installed"; dpkg-deb -f "$deb" | grep -v '^Package:'; } \
    >"$DEST/var/lib/dpkg/status.d/$name"
done

# CA bundle: the ca-certificates package's certificates, sorted, each ending in a newline.
mkdir -p "$DEST/etc/ssl/certs"
mapfile -t certs < <(cd "$DEST" && find usr/share/ca-certificates -type f -name '*.crt' | LC_ALL=C sort)
[ "${#certs[@]}" -gt 0 ] || die "the ca-certificates package held no certificate under /usr/share/ca-certificates"
for c in "${certs[@]}"; do sed -e '$a\' "$DEST/$c"; done >"$DEST/etc/ssl/certs/ca-certificates.crt"

# Users: root, nobody and the unprivileged user the controller runs as (uid/gid 65532, as distroless names it).
cat >"$DEST/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
cat >"$DEST/etc/group" <<'EOF'
root:x:0:
nobody:x:65534:
nonroot:x:65532:
EOF
# Name lookups from local files, host names from /etc/hosts then DNS (the pod's resolv.conf).
cat >"$DEST/etc/nsswitch.conf" <<'EOF'
passwd:    files
group:     files
shadow:    files
hosts:     files dns
networks:  files
protocols: files
services:  files
ethers:    files
rpc:       files
EOF
mkdir -p "$DEST/home/nonroot"
chmod 0644 "$DEST/etc/passwd" "$DEST/etc/group" "$DEST/etc/nsswitch.conf" "$DEST/etc/ssl/certs/ca-certificates.crt"

# What no process of the image reads.
find "$DEST/usr/share/doc" -mindepth 3 ! -type d -delete
find "$DEST/usr/share/doc" -mindepth 2 -maxdepth 2 ! -type d ! -name copyright -delete
find "$DEST/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$DEST"/usr/share/{man,info,lintian,base-files,ca-certificates} "$DEST"/usr/lib/*/gconv \
  "$DEST/usr/sbin/update-ca-certificates" "$DEST/etc/ca-certificates" "$DEST/etc/update-motd.d"

# Everything belongs to root (base-files' /var/local is root:staff in its package; there is no staff group here)
# but what the ownership file names.
if [ "$(id -u)" = 0 ]; then
  chown -hR 0:0 "$DEST"
fi
while read -r path uid gid mode; do
  [ -e "$DEST$path" ] || die "$OWNERSHIP names $path, which the root filesystem does not have"
  [[ "$uid" =~ ^[0-9]+$ && "$gid" =~ ^[0-9]+$ && "$mode" =~ ^[0-7]{3,4}$ ]] \
    || die "$OWNERSHIP: bad line '$path $uid $gid $mode' (expected PATH UID GID MODE, mode in octal)"
  if [ "$(id -u)" = 0 ]; then
    chown -h "$uid:$gid" "$DEST$path"
  fi
  chmod "$mode" "$DEST$path"
done < <(sed -e 's/#.*//' "$OWNERSHIP" | grep -v '^[[:space:]]*$')
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
  find "$DEST" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
fi
echo "image/rootfs.sh: $DEST: ${#packages[@]} packages, $(find "$DEST" | wc -l) paths, $(du -sk "$DEST" | cut -f1) KiB" >&2
