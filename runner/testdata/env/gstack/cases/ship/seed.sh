# Seeds the workspace as gstack's fixtures do: a git repository with one
# commit, and in "full" mode the state folder excluded from git.
set -e
mode=${1:-min}
git init -q -b main .
git config user.email seed@example.invalid
git config user.name seed
printf 'status: broken\n' >app.txt
printf '# app\n' >README.md
git add app.txt README.md
git commit -q -m seed
if [ "$mode" = full ]; then
	printf '.gstack-home/\n' >>.git/info/exclude
fi
echo "seeded ($mode) as uid $(id -u)"
