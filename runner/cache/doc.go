// Package cache is the machine's store, shared by every run folder of the
// machine: verified snapshots of the trees plans digest (skills, fixtures,
// case and Dockerfile folders), by digest. A run folder pins its trees
// from it (store.SharedTrees) by hard links, so a fixture of 20,000 files
// is copied and hashed once per machine, not once per folder, while each
// folder stays self-contained: its store/trees/HEX holds the files
// themselves, which export, merge, report and gate read with no cache.
//
// # Layout
//
//	trees/HEX/         a tree's snapshot, by the plan's tree digest; read-only files
//	trees/HEX.json     what the snapshot holds (files, bytes) and when it was made;
//	                   its modification time is the snapshot's last use, which gc reads
//	trees/HEX.stat     the stat record of the snapshot's files (known.go)
//	index/KEY          the stat index of a live folder hashed through the cache,
//	                   KEY the SHA-256 of its absolute path (live.go)
//	locks/HEX.lock     held shared while a snapshot is placed into a run folder,
//	                   exclusively while it is made, made again or removed
//	tmp/               what is being made; renamed into trees/ once verified
//
// # Trust
//
// Nothing in the cache is trusted without a check. A snapshot is made from
// the live folder with every file hashed while copied and checked against
// the plan's tree, then renamed into place (atomic: a crash leaves only
// tmp/). Every time a run folder takes it, every file placed is checked
// against the plan: a file whose stat, taken just before it is linked, is
// exactly the one its stat record holds (device, inode, size, mode,
// modification and change times), its link's stat after saying the same
// inode and bytes, keeps the digest it was verified to have; any other is
// hashed through its link. An edit changes a file's
// change time, its modification time set back or not, so a snapshot
// damaged on disk (a byte changed, a file added, removed or made writable)
// is refused, removed and made again from the live folder, never used; the
// run's log says so. A link changes the change time too: whoever links
// records the stats again, after the check, as its links' stats (the
// inodes it checked). A stat record damaged on disk
// fails its sum and is ignored (every file hashed). Two processes pinning
// the same tree at once make it once: the second waits on the lock, then
// links what the first made.
//
// A live folder (a suite's skill or fixture) is hashed through its stat
// index the same way (Cache.HashLive), when the plan is compiled and again
// after the rollouts, with git's racy-clean rule besides: an entry is
// trusted only when its file's last change was RacyMargin older than the
// walk that recorded it. After the rollouts, a folder the compile's walk
// set an inotify watch on, with no change reported since, is not walked
// again (Cache.HashWatched, watch.go).
//
// # Kept rollouts
//
// With run --keep-rollouts the cache also keeps each valid rollout a run
// makes, by rollout key, as a run folder holding it alone (rollouts.go);
// run --reuse cache takes them. This package keeps their layout, locks and
// bounds; runner/reuse copies and verifies what goes in and comes out, and
// removes a kept rollout that fails verification.
//
// The cache's folder is $SKILLGATE_CACHE, else skillgate/ in the user's
// cache folder (os.UserCacheDir); `run --cache DIR` overrides both and
// `--cache off` pins by copying, as without a cache. `skillgate cache gc`
// bounds it, snapshots and kept rollouts alike, by size and age.
package cache
