// PostgreSQL storage of routes: one row per org and route name, the route itself as jsonb.

import type { SQL } from 'bun'
import type { Route } from '../../domain/org'
import type { RouteStore } from '../types'
import { q } from './errors'

interface RouteRow {
  name: string
  spec: Omit<Route, 'name' | 'updatedAt'>
  updated_at: string
}

const toRoute = (r: RouteRow): Route => ({ ...r.spec, name: r.name, updatedAt: r.updated_at })

export class PgRouteStore implements RouteStore {
  constructor(private readonly sql: SQL) {}

  async putRoute(orgId: string, route: Omit<Route, 'updatedAt'>): Promise<Route> {
    const { name, ...spec } = route
    const [row] = await q<RouteRow[]>(this.sql`
      INSERT INTO routes (org_id, name, spec, updated_at) VALUES (${orgId}, ${name}, ${spec}::jsonb, ${new Date().toISOString()})
      ON CONFLICT (org_id, name) DO UPDATE SET spec = excluded.spec, updated_at = excluded.updated_at
      RETURNING name, spec, updated_at`)
    if (!row) throw new Error('upsert returned nothing')
    return toRoute(row)
  }

  async getRoutes(orgId: string): Promise<Route[]> {
    return (await q<RouteRow[]>(this.sql`SELECT name, spec, updated_at FROM routes WHERE org_id = ${orgId} ORDER BY name`)).map(toRoute)
  }

  async deleteRoute(orgId: string, name: string): Promise<boolean> {
    return (await q(this.sql`DELETE FROM routes WHERE org_id = ${orgId} AND name = ${name}`)).count > 0
  }
}
