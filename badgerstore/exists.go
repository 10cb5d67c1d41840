package badgerstore

// Exists reports whether dir (as Place returned it) holds a store: a
// reader or an Importer asks before opening, so that looking creates
// nothing where nothing was ever written.
func Exists(dir string) bool { return isStore(ExpandHome(dir)) }
