// Postgres Flexible Server on the private network, with the application database.
//
// The binaries connect with sqlx built without a TLS backend (no `tls-*` feature in the
// workspace's sqlx dependency), so they cannot satisfy the server's default
// `require_secure_transport = on`. The server is therefore reachable only inside the virtual
// network (no public access) and that parameter is turned off. Building sqlx with
// `tls-rustls` and appending `?sslmode=require` to DATABASE_URL would let it be turned back on.

param name string
param location string
param subnetId string
param privateDnsZoneId string
param skuName string
param skuTier string
param storageSizeGB int
param databaseName string
param adminLogin string
@secure()
param adminPassword string

resource server 'Microsoft.DBforPostgreSQL/flexibleServers@2024-08-01' = {
  name: '${name}-pg'
  location: location
  sku: {
    name: skuName
    tier: skuTier
  }
  properties: {
    version: '16'
    administratorLogin: adminLogin
    administratorLoginPassword: adminPassword
    storage: {
      storageSizeGB: storageSizeGB
    }
    network: {
      delegatedSubnetResourceId: subnetId
      privateDnsZoneArmResourceId: privateDnsZoneId
      publicNetworkAccess: 'Disabled'
    }
    highAvailability: {
      mode: 'Disabled'
    }
    backup: {
      backupRetentionDays: 7
      geoRedundantBackup: 'Disabled'
    }
  }
}

resource database 'Microsoft.DBforPostgreSQL/flexibleServers/databases@2024-08-01' = {
  parent: server
  name: databaseName
  properties: {
    charset: 'UTF8'
    collation: 'en_US.utf8'
  }
}

resource plaintextInsideTheNetwork 'Microsoft.DBforPostgreSQL/flexibleServers/configurations@2024-08-01' = {
  parent: server
  name: 'require_secure_transport'
  properties: {
    value: 'off'
    source: 'user-override'
  }
}

output fqdn string = server.properties.fullyQualifiedDomainName
