package monthclose

// SetPartLimits sets how many entries a month manifest holds itself and
// how many a part holds, and returns what puts them back.
func SetPartLimits(inline, part int) func() {
	oldInline, oldPart := inlineEntries, partEntries
	inlineEntries, partEntries = inline, part
	return func() { inlineEntries, partEntries = oldInline, oldPart }
}

// SetAgencyPartLimits sets the most files and bytes one part of a
// publication's intent names, and returns what puts them back.
func SetAgencyPartLimits(files int, bytes int64) func() {
	oldFiles, oldBytes := partFiles, partBytes
	partFiles, partBytes = files, bytes
	return func() { partFiles, partBytes = oldFiles, oldBytes }
}
