# The controller's image, for CI with a registry (docs/image.md):
#   docker build -t REGISTRY/PROJECT/aws-lb-controller:0.1.0 \
#     --build-arg REVISION="$(git rev-parse HEAD)" \
#     --build-arg CREATED="$(TZ=UTC git show -s --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd HEAD)" \
#     --build-arg SOURCE=https://git.example.com/platform/aws-lb-controller .
# The runtime is a distroless-style Debian 12 root filesystem: glibc, libgcc, CA certificates, tzdata, no shell,
# uid/gid 65532. Its packages and assembly are image/packages.txt and image/rootfs.sh, the same the offline
# `image/build` runs: both images hold the same files, user, entrypoint, environment and labels
# (image/tests/test_build.py checks this file against image/build).
ARG RUST_IMAGE=rust:1.95-bookworm
ARG DEBIAN_IMAGE=debian:bookworm-slim

FROM ${RUST_IMAGE} AS build
# The commit being built (.git is not sent to the builder): `--version`, the build-info metric and the label.
# Append -dirty for a modified tree.
ARG REVISION=""
WORKDIR /src
COPY . .
# Release profile, --locked: the versions of Cargo.lock. -p: the AWS fakes (a dev-dependency feature) stay out.
RUN LBC_GIT_REVISION="${REVISION}" cargo build --release --locked -p aws-lb-controller \
 && install -D -m 0755 target/release/aws-lb-controller /out/usr/local/bin/aws-lb-controller

FROM ${DEBIAN_IMAGE} AS rootfs
COPY image/packages.txt image/ownership.txt image/rootfs.sh /image/
# Given (e.g. the commit's time, `git show -s --format=%ct HEAD`), every file's mtime is set to it.
ARG SOURCE_DATE_EPOCH
RUN apt-get update && /image/rootfs.sh /rootfs

FROM scratch
ARG VERSION=0.1.0
ARG REVISION=""
ARG SOURCE=""
ARG CREATED=""
COPY --from=rootfs /rootfs/ /
COPY --from=build /out/ /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/usr/local/bin/aws-lb-controller"]
LABEL org.opencontainers.image.title="aws-lb-controller" \
      org.opencontainers.image.description="Keeps AWS NLB/ALB target groups in sync with Kubernetes pods" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.created="${CREATED}"
