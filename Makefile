# Two commands on a fresh machine:
#   make run    set everything up and start memoryd on 127.0.0.1:8230 (SQLite, local model)
#   make test   set everything up and run the whole test suite with lint and type checks
.PHONY: run test setup setup-dev lint bench

run: setup
	.venv/bin/memoryd serve

test: setup-dev
	.venv/bin/ruff check src tests bench scripts
	.venv/bin/ruff format --check src tests bench scripts
	.venv/bin/mypy
	.venv/bin/python -m pytest -q

setup:
	scripts/setup.sh

setup-dev:
	scripts/setup.sh dev,postgres

bench: setup-dev
	.venv/bin/pip install -q -e ".[bench]"
	.venv/bin/python bench/locomo.py --out bench/results/locomo.json
	.venv/bin/python bench/scale.py --sizes 10000,100000 --sqlite-vec --out bench/results/scale.json
