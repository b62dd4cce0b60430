# One image for the rollflow worker and the python-engines servers (CPU backends).
FROM node:20-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY python-engines/requirements.txt python-engines/
RUN python3 -m venv .venv && .venv/bin/pip install --no-cache-dir -r python-engines/requirements.txt
COPY . .
RUN node_modules/.bin/tsc -p tsconfig.build.json
