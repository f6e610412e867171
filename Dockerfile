# One image for every party of every system: docker-compose.yml picks the role per service.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

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
