// Where Vertex AI requests go (docs/providers.md "Google Vertex AI"): the regional endpoint, the global one, the model paths.

import { expect, test } from 'bun:test'
import { vertexModelPath } from '../../src/providers/vertex/embeddings'
import { vertexBaseUrl } from '../../src/providers/vertex/vertex'

test('a region has its own host; the global location is served by the host without a region', () => {
  expect(vertexBaseUrl('europe-west4')).toBe('https://europe-west4-aiplatform.googleapis.com')
  expect(vertexBaseUrl('global')).toBe('https://aiplatform.googleapis.com')
})

test("a model's path names the project, location, publisher and call, the model id encoded as one segment", () => {
  expect(vertexModelPath({ project: 'p-1', location: 'global' }, 'anthropic', 'claude-sonnet-4@20250514', 'rawPredict')).toBe(
    '/v1/projects/p-1/locations/global/publishers/anthropic/models/claude-sonnet-4%4020250514:rawPredict',
  )
  expect(vertexModelPath({ project: 'p-1', location: 'us-central1' }, 'google', 'text-embedding-005', 'predict')).toBe(
    '/v1/projects/p-1/locations/us-central1/publishers/google/models/text-embedding-005:predict',
  )
})
