//! `runtime::keep_freed_memory_for_reuse`: after it, glibc serves a block over its largest
//! mmap threshold (32 MiB) from a heap (no new mmapped block), and it leaves a user's own
//! glibc malloc tunables alone. One test in its own binary: the setting is process-wide.
//! The block is 48 MiB because the test runs on a thread of the test harness, whose arena's
//! heaps hold at most 64 MiB; glibc maps a larger block there whatever the setting (the
//! trainer's steps run on the main thread, whose heap has no such bound).

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn large_blocks_come_from_the_heap_unless_the_user_tuned_malloc() {
    // glibc's count of blocks it holds as separate mappings.
    fn mapped_blocks() -> usize {
        // SAFETY: mallinfo2 only reads glibc's allocator statistics.
        unsafe { libc::mallinfo2().hblks }
    }
    fn mapped_blocks_while_holding_48_mib() -> (usize, usize) {
        let before = mapped_blocks();
        let block: Vec<u8> = std::hint::black_box(Vec::with_capacity(48 << 20));
        let during = mapped_blocks();
        drop(block);
        (before, during)
    }

    // A user's tunables stand: nothing changes, and the 48 MiB block is mapped as usual.
    // SAFETY: this binary's only test; no other thread reads the environment meanwhile.
    unsafe { std::env::set_var("GLIBC_TUNABLES", "glibc.malloc.check=0") };
    assert!(!lase::runtime::keep_freed_memory_for_reuse());
    let (before, during) = mapped_blocks_while_holding_48_mib();
    assert_eq!(during, before + 1, "glibc's default maps a 48 MiB block");

    // So do the older variables glibc still reads.
    // SAFETY: as above.
    unsafe {
        std::env::remove_var("GLIBC_TUNABLES");
        std::env::set_var("MALLOC_TOP_PAD_", "0");
    }
    assert!(!lase::runtime::keep_freed_memory_for_reuse());
    let (before, during) = mapped_blocks_while_holding_48_mib();
    assert_eq!(during, before + 1, "still glibc's default");

    // SAFETY: as above.
    unsafe { std::env::remove_var("MALLOC_TOP_PAD_") };
    assert!(lase::runtime::keep_freed_memory_for_reuse());
    let (before, during) = mapped_blocks_while_holding_48_mib();
    assert_eq!(during, before, "the 48 MiB block came from a heap");
}
