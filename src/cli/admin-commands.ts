// `gw org|policy|provider|key …`: the admin API as subcommands, working on the configured database.

import { readFileSync } from 'node:fs'
import { AdminService } from '../admin/admin-service'
import { DEFAULT_ORG, ensureDefaultOrg } from '../admin/bootstrap'
import type { Config } from '../config'
import { GatewayError } from '../errors'
import { openStore } from '../server'
import { flag, parseArgs, requireFlag } from './args'

export const ADMIN_USAGE = `  gw org create --name NAME [--id ID]
  gw org show [--org ID]
  gw policy set [--org ID] (--json '{…}' | --file policy.json)
  gw provider set PROVIDER --api-key KEY [--org ID] [--base-url URL] [--disabled]
  gw key create [--org ID] [--name NAME]
  gw key revoke KEY_ID [--org ID]`

type Command = (admin: AdminService, argv: string[]) => Promise<unknown>

const COMMANDS: Record<string, Command> = {
  'org create': async (admin, argv) => {
    const a = parseArgs(argv)
    const id = flag(a, 'id')
    return admin.createOrg({ name: requireFlag(a, 'name'), ...(id ? { id } : {}) })
  },
  'org show': async (admin, argv) => admin.describeOrg(flag(parseArgs(argv), 'org') ?? DEFAULT_ORG),
  'policy set': async (admin, argv) => {
    const a = parseArgs(argv)
    const file = flag(a, 'file')
    const text = file ? readFileSync(file, 'utf8') : requireFlag(a, 'json')
    return admin.putPolicy(flag(a, 'org') ?? DEFAULT_ORG, JSON.parse(text))
  },
  'provider set': async (admin, argv) => {
    const a = parseArgs(argv, ['disabled'])
    const provider = a.positionals[0]
    if (!provider) throw new Error('which provider? (openai, anthropic, google, mistral)')
    const baseUrl = flag(a, 'base-url')
    return admin.putProvider(flag(a, 'org') ?? DEFAULT_ORG, provider, {
      apiKey: requireFlag(a, 'api-key'),
      enabled: !a.flags.has('disabled'),
      ...(baseUrl ? { baseUrl } : {}),
    })
  },
  'key create': async (admin, argv) => {
    const a = parseArgs(argv)
    const name = flag(a, 'name')
    return admin.createServiceKey(flag(a, 'org') ?? DEFAULT_ORG, name ? { name } : {})
  },
  'key revoke': async (admin, argv) => {
    const a = parseArgs(argv)
    const id = a.positionals[0]
    if (!id) throw new Error('which key id? (see `gw org show`)')
    await admin.revokeServiceKey(flag(a, 'org') ?? DEFAULT_ORG, id)
    return { revoked: id }
  },
}

/** Runs `gw <noun> <verb> …`; returns false when the words name no admin command. */
export async function runAdminCommand(config: Config, words: string[]): Promise<boolean> {
  const command = COMMANDS[`${words[0]} ${words[1]}`]
  if (!command) return false
  const store = openStore(config)
  try {
    await ensureDefaultOrg(store)
    const out = await command(new AdminService(store), words.slice(2))
    console.log(JSON.stringify(out, null, 2))
  } catch (err) {
    const msg = err instanceof GatewayError || err instanceof Error ? err.message : String(err)
    console.error(`gw: ${msg}`)
    process.exitCode = 1
  } finally {
    await store.close()
  }
  return true
}
