# A slim image with the base install (no torch): `docker build -t k3doctor .`
#   docker run --rm k3doctor demo
#   docker run --rm --gpus all -v $PWD:/work -w /work k3doctor check --launch-file deploy/launch.sh
FROM python:3.12-slim
WORKDIR /src
COPY setup.cfg pyproject.toml README.md ./
COPY k3doctor ./k3doctor
RUN pip install --no-cache-dir . && rm -rf /src
WORKDIR /work
ENTRYPOINT ["k3doctor"]
CMD ["demo"]
