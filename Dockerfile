# gw in a container: compile the single binary with Bun, run it on a slim base.
# Base images are pinned to exact releases (pin them by digest too in a registry you control: docs/security.md);
# take them from elsewhere with `--build-arg BUILD_IMAGE=… --build-arg RUNTIME_IMAGE=…` (a Node.js 20+ image
# with npm, and a Debian bookworm one).
ARG BUILD_IMAGE=node:20.18.1-bookworm-slim
ARG RUNTIME_IMAGE=debian:12.8-slim

FROM ${BUILD_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build

FROM ${RUNTIME_IMAGE}
# The gw user has no home directory (nothing writes dotfiles into /data); /data is its own, mode 0700.
# /prompts is empty: the image loads no example prompts into a new database (mount yours there).
RUN useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin gw \
    && install -d -o gw -g gw -m 0700 /data && install -d -m 0755 /prompts \
    && apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/dist/gw /usr/local/bin/gw
# Bun allows 256 concurrent outgoing requests by default; gw derives its stream caps from this value (docs/security.md).
# Containers are not terminals: log one JSON line per request for the log collector (GW_LOG_FORMAT=off to silence).
ENV GW_HOST=0.0.0.0 GW_PORT=8787 GW_DB=/data/gw.db GW_PROMPTS_DIR=/prompts BUN_CONFIG_MAX_HTTP_REQUESTS=4096 GW_LOG_FORMAT=json
WORKDIR /data
VOLUME /data
EXPOSE 8787
USER gw
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 CMD ["/usr/local/bin/gw", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/gw"]
CMD ["serve"]
