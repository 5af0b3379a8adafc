# Chorus in a container: a static binary on distroless, running as non-root.
#
#   docker build -t chorus .
#   docker run -p 8080:8080 --network NET -e REDIS_URL=redis://redis:6379/0 chorus
#
# (NET a network of yours on which a Redis container is named redis.)
#
# Without REDIS_URL it runs on the embedded in-memory store (one instance,
# nothing kept). docker-compose.yml runs two instances on Redis behind nginx.
# deploy/deploy_test.go builds both binaries with the same commands as below.

# Keep in step with the go directive of go.mod (the golang images set
# GOTOOLCHAIN=local, so an older Go would refuse to build). The exact patch
# tag always exists; the build stage's distribution does not matter, since
# the binaries are static.
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION} AS build
WORKDIR /src
# Modules first, in their own layer: it is rebuilt only when go.mod or go.sum
# change, not on every source edit.
COPY go.mod go.sum ./
RUN go mod download && go mod verify
COPY . .
# The browser client is inside the binary (go:embed): nothing else to copy.
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/chorus ./cmd/chorus
# The final image has no shell or curl, so its health check is a binary too.
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/healthcheck ./deploy/healthcheck

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/chorus /out/healthcheck /
ENV CHORUS_ADDR=:8080 \
    CHORUS_LOG_FORMAT=json
# distroless's nonroot user, by number so that runAsNonRoot can verify it.
USER 65532:65532
EXPOSE 8080
# /healthcheck asks GET /healthz on the port of CHORUS_ADDR: change the port
# through CHORUS_ADDR, not -addr, or the check will look in the wrong place.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["/healthcheck"]
# Shutdown on SIGTERM is graceful: the streams are drained over
# CHORUS_DRAIN_WINDOW (each closed with 1001 after a reconnect frame), then
# requests get CHORUS_SHUTDOWN_TIMEOUT. Give it the drain window + 5 s + the
# shutdown timeout + 2 s before SIGKILL: docker stop -t 50 with the defaults
# (30 s + 5 s + 10 s + 2 s); docker's own 10 s would kill it mid-drain.
ENTRYPOINT ["/chorus"]
