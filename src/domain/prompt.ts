// Prompts as gw keeps them: the prompt, its numbered versions and their variables (PRODUCT §7, docs/prompts.md).

export interface PromptRecord {
  /** A UUID. */
  id: string
  orgId: string
  slug: string
  name: string | undefined
  publishedVersion: number | undefined
  /** Highest version number; undefined before the first version is saved. */
  currentVersion: number | undefined
  /** The prompt file it is loaded from at every start (docs/prompts.md), which then wins over versions saved otherwise. */
  sourceFile: string | undefined
  createdAt: string
}

export type VariableType = 'string' | 'number' | 'boolean' | 'json'

export interface VariableDef {
  name: string
  type: VariableType
  required: boolean
}

/** What a prompt version holds; versions never change once saved. */
export interface PromptVersionContent {
  systemTemplate: string | undefined
  userTemplate: string
  variables: VariableDef[]
  /** `provider/model-name`. */
  model: string
  temperature: number | undefined
  maxTokens: number | undefined
}

export interface PromptVersion extends PromptVersionContent {
  promptId: string
  version: number
  contentHash: string
  createdAt: string
}
