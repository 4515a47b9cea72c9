//! Page-size classes against the running jemalloc: every class it reports (bins and large
//! extents) that is a whole number of pages is a page-size class, in the same order.

use fragsim::live::LiveBuild;
use fragsim::sizeclass::{PageSizeClasses, SizeClasses};

#[test]
fn page_size_classes_are_jemallocs_page_multiple_classes() {
    let live = LiveBuild::read().unwrap();
    let classes = SizeClasses::new(live.config().unwrap()).unwrap();
    let psz = PageSizeClasses::new(&classes);
    let reported: Vec<u64> = live
        .bins
        .iter()
        .map(|b| b.size)
        .chain(live.large.iter().copied())
        .filter(|size| size % live.page == 0)
        .collect();
    assert!(reported.len() > 100, "{} classes", reported.len());
    for (pind, &size) in reported.iter().enumerate() {
        assert_eq!(psz.pind2sz(pind), size, "pind {pind}");
        assert_eq!(psz.psz2ind(size), pind, "size {size}");
    }
}
