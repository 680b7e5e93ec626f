// The benches' turn: DSH's chunk-heavy shape — start, step start, 40 text chunks, step end,
// end (44 events) — for a session whose next seq is `seq`.
export function turnEvents(seq, turn) {
  const out = []
  const t = (type, data) => out.push({ type, seq: seq + out.length, time: 1000 + seq + out.length, data })
  t('turn/start', { turn })
  t('step/start', { turn, step: 1 })
  for (let i = 0; i < 40; i++) {
    t('assistant/chunk', { turn, step: 1, chunk: { type: 'text-delta', index: 0, text: `token ${i} of turn ${turn} ` } })
  }
  t('step/end', { turn, step: 1 })
  t('turn/end', { turn, reason: { kind: 'completed' } })
  return out
}
