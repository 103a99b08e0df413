// Log bodies keep the JSON text gw already had (the request as received, the answer as sent): the
// writer stores it instead of serialising the value again, and reads give the same value back.

import { expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SecretBox } from '../../src/crypto/secret-box'
import { jsonText, withJsonText } from '../../src/store/json-text'
import { createSqliteStore } from '../../src/store/sqlite'
import { logEntry } from '../helpers/log-entry'

test('a noted text is used as is; anything else is serialised', () => {
  const value = { model: 'openai/gpt-4o', n: 1 }
  expect(jsonText(value)).toBe('{"model":"openai/gpt-4o","n":1}')
  const received = '{ "model" : "openai/gpt-4o", "n": 1.0 }'
  expect(jsonText(withJsonText(value, received))).toBe(received)
  expect(jsonText(withJsonText('plain', '"plain"'))).toBe('"plain"')
})

test('the store writes the noted text and reads back the same value', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-jsontext-'))
  try {
    const path = join(dir, 'gw.db')
    const store = createSqliteStore(path, new SecretBox('s'))
    const received = '{\n  "model": "openai/gpt-4o",\n  "messages": [ { "role": "user", "content": "hi" } ]\n}'
    const requestBody = withJsonText(JSON.parse(received) as object, received)
    const e = { ...logEntry(1, { requestId: 'r-json-text' }), requestBody, responseBody: { ok: true } }
    await store.logs.insertLogs([e])
    const raw = new Database(path, { readonly: true })
      .query<{ request_body: string; response_body: string }, []>('SELECT request_body, response_body FROM request_log_bodies')
      .get()
    expect(raw).toEqual({ request_body: received, response_body: '{"ok":true}' })
    const back = await store.logs.getLog(e.orgId, 'r-json-text')
    expect(back?.requestBody).toEqual(JSON.parse(received))
    await store.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
