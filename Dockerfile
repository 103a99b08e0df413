# gw in a container: compile the single binary with Bun, run it on a slim base.
# Base images are pinned to exact releases (pin them by digest too in a registry you control: docs/security.md).
FROM node:20.18.1-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build

FROM debian:12.8-slim
RUN useradd --system --home-dir /data --create-home gw && apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/dist/gw /usr/local/bin/gw
# Bun allows 256 concurrent outgoing requests by default; gw derives its stream caps from this value (docs/security.md).
# Containers are not terminals: log one JSON line per request for the log collector (GW_LOG_FORMAT=off to silence).
ENV GW_HOST=0.0.0.0 GW_PORT=8787 GW_DB=/data/gw.db BUN_CONFIG_MAX_HTTP_REQUESTS=4096 GW_LOG_FORMAT=json
WORKDIR /data
VOLUME /data
EXPOSE 8787
USER gw
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 CMD ["/usr/local/bin/gw", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/gw"]
CMD ["serve"]
