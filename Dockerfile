# One image for every party of every system: docker-compose.yml picks the role per service.
#
# BASE is any image with Python >= 3.11 and its venv module: the official python:3.11-slim by
# default, or one made from Debian's packages where that cannot be pulled (.ci/run:
# debootstrap --variant=minbase --include=python3,python3-venv,python3-pip bookworm ROOTFS,
# then tar -C ROOTFS -c . | docker import - mpc-base:bookworm; build with
# --build-arg BASE=mpc-base:bookworm).
ARG BASE=python:3.11-slim
FROM ${BASE}

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/mpc/bin:$PATH

WORKDIR /app

# A virtual environment of its own, whatever Python the base image has (Debian's refuses
# system-wide installs by pip), first on PATH: `python` and `mpc` are its.
RUN python3 -m venv /opt/mpc

# The dependencies first, read from pyproject.toml: this layer is rebuilt only when they change,
# not on every change of the source.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

# Then the framework itself (no dependency resolution left to do).
COPY README.md ./
COPY mpc ./mpc
COPY protocols ./protocols
COPY parties ./parties
RUN pip install --no-deps . && rm -rf build *.egg-info

# A non-root user owns the mount points of docker-compose.yml's volumes: a fresh named volume
# takes the owner and mode of the folder it is mounted on, so each is writable by that user and
# nothing else. /public holds the deployment files and public keys; each party's secret key,
# private input, report and saved model get a folder (a volume) of their own, mode 0700.
ARG PARTIES="site1 site2 site3 dealer alice bob cdbs client"
ARG REPORTS="site1 site2 site3 ppid3-dealer hybrid-dealer alice bob cdbs client"
ARG MODELS="site1 site2 site3"
RUN useradd --system --uid 10001 --user-group --home-dir /app --no-create-home mpc \
    && mkdir -p /public /secrets/monitor /private /reports /models /var/lib/cdbs /data \
    && for p in $PARTIES; do mkdir -p /secrets/$p /private/$p; done \
    && for s in $REPORTS; do mkdir -p /reports/$s; done \
    && for m in $MODELS; do mkdir -p /models/$m; done \
    && chown -R mpc:mpc /public /secrets /private /reports /models /var/lib/cdbs \
    && chmod 0700 /secrets/* /private/* /reports/* /models/* /var/lib/cdbs
USER mpc

# Each service of docker-compose.yml gives the command (a party, mpc keygen, mpc deploy).
CMD ["mpc", "--help"]
