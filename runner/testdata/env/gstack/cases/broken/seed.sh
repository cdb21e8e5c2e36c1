echo "cannot seed: no template here" >&2
exit 3
