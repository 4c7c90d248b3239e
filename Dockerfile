# syntax=docker/dockerfile:1
# The base is pinned by exact version: Node 24.21.0 (the Node 24 that CI runs the suite on) on
# Alpine 3.23. A digest would pin it harder; take it with `docker buildx imagetools inspect`
# where a registry is reachable, and append it as @sha256:... to both FROM lines.
# Build: compile TypeScript with the development dependencies.
FROM node:24.21.0-alpine3.23 AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the embedded development database is not needed to compile.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# Runtime: the compiled code, the SQL migrations and the two production dependencies only.
FROM node:24.21.0-alpine3.23
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY sql ./sql
COPY api ./api
COPY templates ./templates
COPY data ./data
# DATA_DIR (./.data) is where mail goes as .eml files when SMTP_URL is unset; /app belongs to
# root, so the directory is made here and given to the user the service runs as.
RUN mkdir -p /app/.data && chown node:node /app/.data
USER node
EXPOSE 8080
STOPSIGNAL SIGTERM
# Node's own fetch, on the address HOST names (src/healthcheck.ts): the image needs no curl or wget.
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "dist/healthcheck.js"]
# A young generation of 16 MiB semi-spaces: Node 24 sizes it from the host's memory, and under
# full load the process then holds about 255 MiB against 175 MiB, with the same throughput
# (docs/performance.md, "Resident memory on Node 24"). Tests and the bench run this line.
CMD ["node", "--max-semi-space-size=16", "dist/main.js"]
