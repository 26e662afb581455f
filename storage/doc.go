// Package storage is cairn's durable storage on a vfs.FS: an append-only,
// segmented log of framed records with a rolling history digest, and small
// state files replaced atomically.
//
// Durability is asynchronous. Appends write to files at once; RequestSync
// asks the Host for a sync and returns; the outcome arrives as a callback,
// and everything appended while a sync was in flight rides the next one
// (group commit). A failed sync is fatal for the log: the log refuses all
// further work, never reports the unsynced records as durable and never
// retries, because after a failed fsync the kernel may already have dropped
// the dirty pages it could not write.
//
// # Log layout
//
// A log is a directory of segment files named by the index of their first
// record ("00000000000000000001.seg"). Each segment starts with a header
// (magic, version, first index, and the valid length and closing digest of
// the previous segment) followed by frames:
//
//	crc32c u32 | body length u32 | type u8 | index u64 | synced-through u32 | body
//
// The CRC covers everything after itself. Synced-through is the segment
// offset that was known durable when the frame was written; on open, the
// largest synced-through among valid frames is a lower bound on what the
// segment had made durable, so a bad frame below it is corruption inside
// synced data, and a bad frame at or above it is a torn, unsynced tail.
//
// A new segment is first written as "<first>.seg.pending" and renamed to
// its final name only after the previous segment is fully synced, and then
// the directory is synced. So a segment that is visible under its final
// name always follows a complete predecessor, whatever order the disk
// persisted things in. Open never rewrites a torn tail: it leaves the torn
// bytes where they are and starts a new segment whose header records the
// predecessor's valid length, so later opens ignore the torn bytes.
//
// A new log that starts at index 1 with no base digest asks for no sync
// when it is opened: an empty directory reopens as the same log, so its
// first segment's header and its new directories become durable with its
// first records. A new log that starts anywhere else syncs its header at
// once, since only that header records where it starts. Directory syncs
// go through the Host; a SharedDirHost lets requests for one directory
// that arrive while a sync of it is in flight share the next one.
//
// One blind spot is inherent: if the very last frame of a segment was
// synced and then damaged, and nothing was written after it, nothing on
// disk says it was synced, and it is treated as a torn tail. Replication
// (comparing digests with peers) is what covers that case.
//
// # Disks that lie
//
// A disk can acknowledge a sync and still lose the data (a lost write), or
// write it somewhere else (a misdirected write). On Linux the page cache
// adds a quieter version of the same lie: after a failed fsync the kernel
// marks the unwritten pages clean, so a restarted process reads them back,
// syncs them "successfully", and may believe records durable that never
// reached the platter. Nothing in one log can tell such a tail from a good
// one, so storage does not try. The rule lives one level up, in the queue
// replica: a log reopened by a new process is suspect. Its records are
// served and replicated as usual, but its own word about what it holds is
// not enough evidence for a recovery to select a history (a seal then needs
// one witness more than a quorum) until an owner has verified the log
// through a confirmed index, or a recovery installed a selected history in
// it. A replica also remembers the highest index it was told is confirmed
// and refuses to drop any record at or below it. LoseLastFrames and
// MisdirectLastFrames imitate these lies for the simulator and tests.
package storage
