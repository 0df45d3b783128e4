# bloomkit's image for users with Docker: the same image `make image` builds
# without Docker (release/image; keep the two in agreement — a test compares
# them). Build: docker build -t bloomkit/bloom .
#
# Run: docker run -d -p 6479:6479 -v bloom-data:/data -e BLOOMKIT_REQUIREPASS=change-me bloomkit/bloom
#
# The server listens on every interface of the container: set a password
# (BLOOMKIT_REQUIREPASS; the health check reads it too) unless the network
# around the container is private.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
ARG COMMIT=
ARG DATE=
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/bloomkit/bloomkit/internal/version.tag=${VERSION} -X github.com/bloomkit/bloomkit/internal/version.commit=${COMMIT} -X github.com/bloomkit/bloomkit/internal/version.date=${DATE}" \
      -o /out/usr/local/bin/bloom ./cmd/bloom \
 && mkdir -p /out/etc /out/tmp /out/data /out/usr/share/doc/bloomkit \
 && chmod 1777 /out/tmp && chmod 700 /out/data && chown 65532:65532 /out/data \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:bloomkit:/data:/sbin/nologin\n' > /out/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' > /out/etc/group \
 && cp LICENSE THIRD_PARTY_LICENSES /out/usr/share/doc/bloomkit/

FROM scratch
COPY --from=build /out/ /
ENV PATH=/usr/local/bin
USER 65532:65532
WORKDIR /data
VOLUME /data
EXPOSE 6479
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["/usr/local/bin/bloom", "ping", "--timeout", "2s"]
ENTRYPOINT ["/usr/local/bin/bloom", "serve"]
CMD ["--addr", "0.0.0.0:6479", "--dir", "/data"]
