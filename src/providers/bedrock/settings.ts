// A Bedrock provider record's settings (PRODUCT §17): its region, and AWS access keys or a Bedrock API key.

import type { BedrockTarget } from '../adapter'
import type { AwsCredentials } from './sigv4'

export interface BedrockSettings {
  kind: 'bedrock'
  region: string
  /** AWS access keys, signed with SigV4 per attempt; undefined when the record's `apiKey` is a Bedrock API key. */
  credentials: AwsCredentials | undefined
}

/** What the adapter needs of a record: its name, region and credentials. */
export function bedrockTarget(name: string, rec: { apiKey: string; bedrock?: BedrockSettings }): BedrockTarget | undefined {
  if (!rec.bedrock) return undefined
  const { region, credentials } = rec.bedrock
  return { name, region, auth: credentials ? { kind: 'sigv4', credentials } : { kind: 'apiKey', apiKey: rec.apiKey } }
}

/** A cross-region inference profile's prefix before the model id (`us.anthropic.claude-…`). */
const PROFILE = /^(us|eu|apac|us-gov|global|jp|au|ca)\./

/** The foundation model an id names: an inference profile (`us.`, `eu.`, `global.`, … before it) as its model (docs/providers.md "AWS Bedrock"). */
export const foundationModel = (modelId: string): string => modelId.replace(PROFILE, '')
