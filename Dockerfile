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

# A non-root user owns the mount points, so that fresh named volumes (keys, deployment,
# reports, the CDBS database) are writable by it and nothing else.
RUN useradd --system --uid 10001 --user-group --home-dir /app --no-create-home mpc \
    && mkdir -p /keys /deploy /reports /var/lib/cdbs /data \
    && chown mpc:mpc /keys /deploy /reports /var/lib/cdbs \
    && chmod 0700 /keys
USER mpc

# Each service of docker-compose.yml gives the command (a party, mpc keygen, mpc deploy).
CMD ["mpc", "--help"]
