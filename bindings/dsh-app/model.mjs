// A scripted model for DSH's app, on 127.0.0.1 only: it answers DSH's OpenAI-style
// `POST /chat/completions` (server-sent events) from a script chosen by the task's first word,
// and nothing else. Bounded: at most `maxRequests` answers, none after `close()`, and it closes
// itself after `lifetimeMs` whatever happens.
//
// Scripts, by the task's first word (the first user message):
//   hello   a short answer
//   read    a call of DSH's `read` tool on notes.txt, then an answer quoting its first line
//   long    a long answer streamed in `longChunks` pieces
//   slow    an answer streamed a piece every `slowMs` until the client goes (to be killed)
//   steps N a call of `read` at each of N steps, then an answer (a long session: the benchmark)
// A title request (DSH's title model) gets a fixed title.

import http from 'node:http'

/** Starts the model; resolves to `{ url, close, requests, chunksSent }`. */
export function startModel({ maxRequests = 2000, lifetimeMs = 20 * 60_000, longChunks = 400, slowMs = 25 } = {}) {
  let requests = 0
  let chunksSent = 0
  const open = new Set()
  const server = http.createServer((req, res) => {
    open.add(res)
    res.on('close', () => open.delete(res))
    if (req.method !== 'POST' || !req.url.endsWith('/chat/completions') || requests >= maxRequests) {
      res.writeHead(404).end()
      return
    }
    requests++
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (c) => (body += c))
    req.on('end', () => answer(JSON.parse(body), res))
  })
  const stream = (res, n) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    const base = { id: `chatcmpl-${n}`, object: 'chat.completion.chunk', created: 1, model: 'scripted' }
    return {
      delta: (delta, finish = null) =>
        res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`),
      end: () => {
        res.write(`data: ${JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })}\n\n`)
        res.end('data: [DONE]\n\n')
      },
    }
  }
  const text = (res, pieces) => {
    const s = stream(res, requests)
    s.delta({ role: 'assistant', content: '' })
    for (const p of pieces) s.delta({ content: p })
    s.delta({}, 'stop')
    s.end()
  }
  const answer = (request, res) => {
    const messages = request.messages ?? []
    const content = (m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''))
    if (messages.some((m) => m.role === 'system' && content(m).includes('concise title'))) {
      text(res, ['Scripted ', 'title'])
      return
    }
    const task = content(messages.find((m) => m.role === 'user') ?? { content: '' }).trim()
    const word = task.split(/\s+/)[0]
    if (word === 'hello') {
      text(res, ['Hello ', 'from ', 'the ', 'scripted ', 'model.'])
    } else if (word === 'read') {
      const tool = messages.find((m) => m.role === 'tool')
      if (tool === undefined) {
        const s = stream(res, requests)
        s.delta({ role: 'assistant', content: '' })
        s.delta({
          tool_calls: [{ index: 0, id: 'call_read_1', type: 'function', function: { name: 'read', arguments: '' } }],
        })
        s.delta({ tool_calls: [{ index: 0, function: { arguments: '{"file_path":' } }] })
        s.delta({ tool_calls: [{ index: 0, function: { arguments: '"notes.txt"}' } }] })
        s.delta({}, 'tool_calls')
        s.end()
      } else {
        const first = content(tool).split('\n').find((l) => l.includes('line one')) ?? '(not found)'
        text(res, ['The notes ', 'begin: ', first.trim()])
      }
    } else if (word === 'long') {
      text(res, Array.from({ length: longChunks }, (_, i) => `piece${i} `))
    } else if (word === 'slow') {
      const s = stream(res, requests)
      s.delta({ role: 'assistant', content: '' })
      let i = 0
      const tick = setInterval(() => {
        if (res.destroyed || i >= 10_000) {
          clearInterval(tick)
          if (!res.destroyed) res.end()
          return
        }
        s.delta({ content: `slow${i++} ` })
        chunksSent++
      }, slowMs)
      res.on('close', () => clearInterval(tick))
    } else if (word === 'steps') {
      const n = Number(task.split(/\s+/)[1] ?? 1)
      const done = messages.filter((m) => m.role === 'tool').length
      if (done < n) {
        const s = stream(res, requests)
        s.delta({ role: 'assistant', content: `Step ${done + 1}. ` })
        s.delta({
          tool_calls: [
            { index: 0, id: `call_${done}`, type: 'function', function: { name: 'read', arguments: '{"file_path":"notes.txt"}' } },
          ],
        })
        s.delta({}, 'tool_calls')
        s.end()
      } else {
        text(res, ['Done ', 'after ', `${n} `, 'steps.'])
      }
    } else {
      res.writeHead(400, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: `no script for ${JSON.stringify(word)}` } }))
    }
  }
  const lifetime = setTimeout(() => close(), lifetimeMs)
  lifetime.unref()
  const close = () =>
    new Promise((resolve) => {
      clearTimeout(lifetime)
      for (const res of open) res.destroy()
      server.close(() => resolve())
    })
  return new Promise((resolve, reject) => {
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      resolve({
        url: `http://127.0.0.1:${port}`,
        close,
        requests: () => requests,
        chunksSent: () => chunksSent,
      })
    })
  })
}
