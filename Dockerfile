# syntax=docker/dockerfile:1
# Images for both binaries, built from one stage:
#   docker build --target api    -t sheetrelay-api .
#   docker build --target worker -t sheetrelay-worker .
# The build needs no database: sqlx's compile-time checks read the committed .sqlx/ data.

FROM rust:1-bookworm AS builder
WORKDIR /src
ENV SQLX_OFFLINE=true \
    CARGO_TERM_COLOR=never \
    CARGO_INCREMENTAL=0
COPY . .
# Registry, git checkouts and target/ live in cache mounts, so a rebuild after a code change
# recompiles only our crates. The binaries are copied out of the mount in the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked -p api -p worker \
 && mkdir -p /out \
 && cp target/release/api target/release/worker /out/

FROM debian:bookworm-slim AS runtime
# ca-certificates: TLS to Azure and managed Postgres.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 app \
 && useradd --system --uid 10001 --gid app --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin app
WORKDIR /app
ENV RUST_LOG=info \
    LOG_FORMAT=json
USER 10001:10001

FROM runtime AS worker
COPY --from=builder /out/worker /usr/local/bin/worker
ENTRYPOINT ["/usr/local/bin/worker"]
CMD ["run"]

# Last, so a plain `docker build .` gives the api.
FROM runtime AS api
COPY --from=builder /out/api /usr/local/bin/api
ENV LISTEN_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/api"]
