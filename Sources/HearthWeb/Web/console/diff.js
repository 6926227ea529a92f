// Line diff for the rules history: the longest common subsequence of lines, as Unix diff shows it.
// Rules files are small (hundreds of lines), so the quadratic table is fine and keeps this short.

/**
 * The lines of `before` and `after` as kept, removed or added, in order.
 * @example lineDiff("a\nb", "a\nc") // [{kind: "same", text: "a"}, {kind: "del", text: "b"}, {kind: "add", text: "c"}]
 */
export function lineDiff(before, after) {
  const a = before.split("\n"), b = after.split("\n");
  const n = a.length, m = b.length;
  // lcs[i][j]: length of the longest common subsequence of a[i..] and b[j..].
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push({ kind: "same", text: a[i], before: i + 1, after: j + 1 }); i++; j++; }
    else if (lcs[i + 1][j] >= lcs[i][j + 1]) { out.push({ kind: "del", text: a[i], before: i + 1 }); i++; }
    else { out.push({ kind: "add", text: b[j], after: j + 1 }); j++; }
  }
  for (; i < n; i++) out.push({ kind: "del", text: a[i], before: i + 1 });
  for (; j < m; j++) out.push({ kind: "add", text: b[j], after: j + 1 });
  return out;
}

/** Hunks of a diff: changed lines with `context` unchanged lines around them; long unchanged runs fold. */
export function hunks(diff, context = 3) {
  const keep = diff.map((line) => line.kind !== "same");
  const near = diff.map((_, index) => {
    for (let k = Math.max(0, index - context); k <= Math.min(diff.length - 1, index + context); k++) if (keep[k]) return true;
    return false;
  });
  const out = [];
  let folded = 0;
  diff.forEach((line, index) => {
    if (near[index]) {
      if (folded) { out.push({ kind: "fold", count: folded }); folded = 0; }
      out.push(line);
    } else folded++;
  });
  if (folded) out.push({ kind: "fold", count: folded });
  return out;
}
