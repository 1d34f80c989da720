# The omectl controller image (`omectl run`). Build on a machine with a Docker engine:
#   docker build -t omectl:dev .          (or `make image`; `make kind-up` builds it too)
# Multi-stage: the builder installs omectl and its pinned dependencies (constraints.txt) into a virtualenv; the
# runtime stage copies only that virtualenv onto the same base and runs as an unprivileged user (65532), so it
# works under the Deployment's runAsNonRoot and read-only root filesystem.
#
# The base is pinned by version. For reproducible builds pin it by digest as well, e.g.
#   docker build --build-arg PYTHON_IMAGE=python:3.11.11-slim-bookworm@sha256:<digest> .
# with the digest your registry reports (`docker buildx imagetools inspect python:3.11.11-slim-bookworm`).
ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/omectl
WORKDIR /src
# Dependencies first (cached while only the sources change).
COPY pyproject.toml constraints.txt README.md ./
COPY omectl ./omectl
RUN /opt/omectl/bin/pip install -c constraints.txt . \
 && /opt/omectl/bin/omectl --help >/dev/null

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="omectl" \
      org.opencontainers.image.description="Asyncio multi-cluster controller for LLM serving on GPU fleets" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 65532 omectl \
 && useradd --system --uid 65532 --gid 65532 --home-dir /var/lib/omectl --no-create-home --shell /usr/sbin/nologin omectl \
 && install -d -o 65532 -g 65532 /var/lib/omectl
COPY --from=builder /opt/omectl /opt/omectl
ENV PATH=/opt/omectl/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TMPDIR=/tmp
WORKDIR /var/lib/omectl
USER 65532:65532
EXPOSE 9443
ENTRYPOINT ["omectl"]
CMD ["run"]
