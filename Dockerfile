# podipam image, the Docker way: a convenience for those who build with a Docker daemon.
# The image that is tested and released is `npm run image` (scripts/image/build-image.mjs:
# no daemon, reproducible, with an SBOM); this file keeps the same contents and users (Node.js 20
# at /usr/local/bin/node, /opt/podipam, every addon, iptables, user 65532) on Docker's node base.
# Build: docker build -t podipam/podipam:0.1.0 .   (deploy/ expects that name; see README)
#
# Stage 1 builds everything that needs a compiler: the TypeScript, the native shim, the flock
# addon and better-sqlite3 (compiled against this Node.js).
FROM node:20-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ git && rm -rf /var/lib/apt/lists/*
# The same directory as in the final stage: the shim compiles in the path of bin/podipam.
WORKDIR /opt/podipam
COPY package.json package-lock.json binding.gyp ./
COPY native ./native
COPY scripts ./scripts
RUN npm ci
COPY . .
RUN npm run build && npm prune --omit=dev \
 && rm -rf dist/test dist/bench && find dist -name '*.test.js' -delete

# Stage 2: Node.js + dist + the shim + runtime node_modules, nothing else.
FROM node:20-bookworm-slim
# iptables: the agent's node masquerade (PODIPAM-MASQ). Debian's default is the nft flavour,
# which shares the host's nat table with kube-proxy and the CNI plugins on nft hosts.
RUN apt-get update && apt-get install -y --no-install-recommends iptables && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/podipam
COPY --from=build /opt/podipam/package.json ./
COPY --from=build /opt/podipam/bin ./bin
COPY --from=build /opt/podipam/dist ./dist
COPY --from=build /opt/podipam/build/Release/*.node ./build/Release/
COPY --from=build /opt/podipam/node_modules ./node_modules
# The user serve and the controller run as, with a home (as in `npm run image`'s image).
RUN ln -s /opt/podipam/bin/podipam /usr/local/bin/podipam && podipam version \
 && echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin' >> /etc/passwd \
 && echo 'nonroot:x:65532:' >> /etc/group && mkdir -m 0750 /home/nonroot && chown 65532:65532 /home/nonroot
# serve and the controller run as this user (deploy/base/deployment.yaml); the DaemonSet's
# install-cni and agent run as root because they write host directories owned by root.
USER 65532:65532
ENTRYPOINT ["podipam"]
CMD ["serve", "--listen", "0.0.0.0:7420"]
