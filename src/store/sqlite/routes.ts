// SQLite storage of routes: one row per org and route name, the route itself as JSON.

import type { Database } from 'bun:sqlite'
import type { Route } from '../../domain/org'
import type { RouteStore } from '../types'

interface RouteRow {
  name: string
  spec: string
  updated_at: string
}

const toRoute = (r: RouteRow): Route => ({ ...(JSON.parse(r.spec) as Omit<Route, 'name' | 'updatedAt'>), name: r.name, updatedAt: r.updated_at })

export class SqliteRouteStore implements RouteStore {
  private readonly q

  constructor(db: Database) {
    this.q = {
      put: db.query<RouteRow, [string, string, string, string]>(
        `INSERT INTO routes (org_id, name, spec, updated_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (org_id, name) DO UPDATE SET spec = ?3, updated_at = ?4 RETURNING name, spec, updated_at`,
      ),
      list: db.query<RouteRow, [string]>('SELECT name, spec, updated_at FROM routes WHERE org_id = ?1 ORDER BY name'),
      delete: db.query<null, [string, string]>('DELETE FROM routes WHERE org_id = ?1 AND name = ?2'),
    }
  }

  async putRoute(orgId: string, route: Omit<Route, 'updatedAt'>): Promise<Route> {
    const { name, ...spec } = route
    const row = this.q.put.get(orgId, name, JSON.stringify(spec), new Date().toISOString())
    if (!row) throw new Error('upsert returned nothing')
    return toRoute(row)
  }

  async getRoutes(orgId: string): Promise<Route[]> {
    return this.q.list.all(orgId).map(toRoute)
  }

  async deleteRoute(orgId: string, name: string): Promise<boolean> {
    return this.q.delete.run(orgId, name).changes > 0
  }
}
