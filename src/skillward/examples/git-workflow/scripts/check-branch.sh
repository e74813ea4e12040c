#!/bin/sh
# Checks that the current branch follows <type>/<short-topic>.
branch=$(git rev-parse --abbrev-ref HEAD)
case "$branch" in
  feat/*|fix/*|docs/*|chore/*) echo "ok: $branch" ;;
  *) echo "branch '$branch' should look like <type>/<short-topic>" >&2; exit 1 ;;
esac
